"""deploy/k8s/: every manifest valid against the Kubernetes schemas, offline (kubernetes-validate ships them), and
wired together: the Deployment mounts the claim, the Service selects the pods, the Ingress keeps a browser on one."""

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

kubernetes_validate = pytest.importorskip("kubernetes_validate")

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
KUBERNETES = "1.33.0"


@pytest.mark.parametrize("path", sorted(K8S.glob("*.yaml")), ids=lambda path: path.name)
def test_each_manifest_is_valid_against_the_kubernetes_schema(path):
    for document in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(document, KUBERNETES, strict=True)  # raises, naming the field


def test_an_unknown_field_is_refused_so_the_check_can_fail():
    deployment = yaml.safe_load((K8S / "deployment.yaml").read_text())
    deployment["spec"]["replica"] = 2  # a typo
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_the_manifests_fit_together():
    deployment, service, ingress, claim = (yaml.safe_load((K8S / f"{name}.yaml").read_text())
                                           for name in ("deployment", "service", "ingress", "pvc"))
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert "ReadWriteMany" in claim["spec"]["accessModes"] and deployment["spec"]["replicas"] >= 2
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["ATTENTION_LAB_DATA_DIR"] == container["volumeMounts"][0]["mountPath"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/_stcore/health"
    assert service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == service["metadata"]["name"]
    assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/affinity"] == "cookie"


def test_the_replicas_share_the_class_store_and_its_password_is_a_secret_written_nowhere():
    deployment = yaml.safe_load((K8S / "deployment.yaml").read_text())
    db_service, db = yaml.safe_load_all((K8S / "postgres.yaml").read_text())
    env = {item["name"]: item for item in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    url = env["ATTENTION_LAB_DATABASE_URL"]["value"]
    assert url.startswith("postgresql+psycopg://") and f"@{db_service['metadata']['name']}:5432/" in url
    assert "$(DB_PASSWORD)" in url and list(env).index("DB_PASSWORD") < list(env).index("ATTENTION_LAB_DATABASE_URL")
    secret = env["DB_PASSWORD"]["valueFrom"]["secretKeyRef"]
    db_env = {item["name"]: item for item in db["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert db_env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"] == secret
    assert db_service["spec"]["selector"] == db["spec"]["template"]["metadata"]["labels"]
    compose = yaml.safe_load((K8S.parent / "compose.yaml").read_text())
    assert "@db:5432/" in compose["services"]["app1"]["environment"]["ATTENTION_LAB_DATABASE_URL"]
    assert "LAB_DB_PASSWORD" in compose["services"]["db"]["environment"]["POSTGRES_PASSWORD"]


def test_every_proxy_takes_the_uploads_the_app_takes():
    root = Path(__file__).resolve().parents[2]
    app_mb = int(re.search(r"^maxUploadSize = (\d+)", (root / ".streamlit" / "config.toml").read_text(), re.M)[1])
    spec = importlib.util.spec_from_file_location("render_nginx", root / "deploy" / "render_nginx.py")
    render_nginx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_nginx)
    rendered = render_nginx.render("8080", ["127.0.0.1:8501"], Path("/tmp/x"), upload_mb=app_mb)
    assert f"client_max_body_size {app_mb + 1}m;" in rendered and "${" not in rendered
    assert f'UPLOAD_MB: "{app_mb + 1}"' in (root / "deploy" / "compose.yaml").read_text()
    ingress = (root / "deploy" / "k8s" / "ingress.yaml").read_text()
    assert re.search(rf"proxy-body-size: {app_mb + 1}m\b", ingress)
