"""A class in the room: the teacher asks, every student predicts, the lab reveals. Plain Python and SQLAlchemy, no
Streamlit and no TensorFlow: the join code and the teacher's key (`classroom.codes`), the questions and their marks
(`classroom.questions`), and the store every replica shares (`classroom.store`). The pages reach it through
`ui.class_room`; the answers it keeps are computed by the engine on the server, never sent from a page."""
