"""The app's pages: file and URL path, title, Material icon, and what Home (and the navigation's help) says each one
shows; and the navigation's sections, in the order a newcomer meets them. A page is named by `Page` (``Page.ATTENTION
.file`` is its script), never by a path typed out: a mistyped member fails where the line runs, and a linter sees it."""

from enum import StrEnum

PAGES = (
    ("home", "Home", "home", ""),
    ("masks", "Masks", "grid_on", "padding, look-ahead and target masks, and how they broadcast"),
    ("positional_encoding", "Positional encoding", "waves", "sinusoids, wavelengths, similarity"),
    ("attention", "Attention", "visibility", "every head of every layer, with statistics and checks"),
    ("heads", "Heads", "psychology", "what each head does (its role) and which heads matter (ablation)"),
    ("explanations", "Explanations", "rule", "which explanation of a trained model is right: six methods measured "
     "against the known alignment"),
    ("images", "Images", "image", "a Vision Transformer's attention over an image: edit pixels, see every head"),
    ("query_key", "Query–key", "scatter_plot", "one head's queries and keys over many lines in one plane"),
    ("induction", "Induction heads", "content_copy", "a model that copies in context: which heads do it, and how they "
     "form"),
    ("patching", "Patching", "call_split", "which part of a trained model carries its answer: copy one activation "
     "from a clean run into a corrupted one and see how much comes back"),
    ("dot_product_lab", "Dot-product lab", "science", "one head step by step, why scale, mask fills"),
    ("shapes", "Shapes", "straighten", "the tensor shapes of multi-head attention, step by step"),
    ("cost", "Cost", "speed", "time and memory of one attention layer against N, by mask and key/value heads"),
    ("decode", "Decode", "play_circle", "a trained model writes its answer token by token, with its cache"),
    ("train", "Train", "model_training", "train a small model in the background, then look at its attention"),
    ("class_room", "Class", "groups", "a class answers the teacher's questions about any view; the lab reveals the "
     "model's answer beside theirs"),
    ("glossary", "Glossary", "menu_book", "the lab's words in plain language: query, key, head, mask, softmax, …"),
)

SECTIONS = (  # (header, pages): every page in view, none folded behind "View more"
    ("", ("home",)),
    ("What you look at", ("masks", "positional_encoding", "attention", "images", "query_key")),
    ("What explains it", ("dot_product_lab", "shapes", "heads", "induction", "patching", "explanations",
                           "glossary")),
    ("What you measure", ("cost", "decode")),
    ("What a class does", ("train", "class_room")),
)



class Page(StrEnum):
    """Every page by name (``Page.ATTENTION == "attention"``, its URL path); `PAGES` holds the same names."""

    HOME = "home"
    MASKS = "masks"
    POSITIONAL_ENCODING = "positional_encoding"
    ATTENTION = "attention"
    HEADS = "heads"
    EXPLANATIONS = "explanations"
    IMAGES = "images"
    QUERY_KEY = "query_key"
    INDUCTION = "induction"
    PATCHING = "patching"
    DOT_PRODUCT_LAB = "dot_product_lab"
    SHAPES = "shapes"
    COST = "cost"
    DECODE = "decode"
    TRAIN = "train"
    CLASS_ROOM = "class_room"
    GLOSSARY = "glossary"

    @property
    def file(self) -> str:
        """The page's script, as ``st.navigation``, ``st.switch_page`` and ``st.page_link`` name it."""
        return f"app_pages/{self.value}.py"
