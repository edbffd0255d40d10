"""Policy tests on what kustomize renders: each base folder alone and both overlays."""

from __future__ import annotations

import pytest
import yaml

from petstore_devstack.releases import DEPLOYABLES, current_version
from petstore_devstack.signing import SIGNER_PROCESSES, TRUSTED_ISSUERS

from .support import (
    APPS,
    BASES,
    K8S,
    OVERLAYS,
    PROD_SETTINGS,
    REPO,
    SCALED,
    SERVICES,
    SINGLE_REPLICA,
    ComposeLoader,
    Doc,
    containers,
    name_of,
    of_kind,
    pod_labels,
    rendered,
    selects,
    workloads,
)

RENDERS = [f"base/{name}" for name in BASES] + [f"overlays/{name}" for name in OVERLAYS]
WORKLOAD_RENDERS = [r for r in RENDERS if not r.endswith("network-policies")]
SECRET_ENV = ("PETSTORE_API_KEYS", "PETSTORE_SESSION_SECRET", "MONGODB_URI", "CALLER_SIGNING_KEY")
GRPC_PORTS = {"pet-service": 50051, "order-service": 50052, "user-service": 50053, "webhook-service": 50054}


def test_every_folder_has_a_kustomization() -> None:
    for render in RENDERS:
        assert (K8S / render / "kustomization.yaml").is_file(), render


@pytest.mark.parametrize("app", APPS)
def test_each_team_folder_renders_a_complete_set(app: str) -> None:
    """`kubectl apply -k deploy/k8s/base/<app>` alone gives the team everything it runs."""
    kinds = {doc["kind"] for doc in rendered(f"base/{app}")}
    expected = {"Deployment", "Service", "ServiceAccount", "ConfigMap"}
    assert expected <= kinds
    scaled = {"PodDisruptionBudget", "HorizontalPodAutoscaler"}
    assert (scaled <= kinds) if app in SCALED else not (scaled & kinds), app
    if app == "gateway":
        assert "Ingress" in kinds


@pytest.mark.parametrize(
    "render", [f"base/{app}" for app in SINGLE_REPLICA] + [f"overlays/{o}" for o in OVERLAYS]
)
def test_the_webhook_service_runs_exactly_one_pod_never_two_at_once(render: str) -> None:
    """Its worker per endpoint orders that endpoint's deliveries: a second pod would send them
    again, out of order. Recreate stops the old pod before the new one starts (a rolling
    update runs both for a while); nothing may scale it."""
    docs = rendered(render)
    for app in SINGLE_REPLICA:
        (deployment,) = [d for d in of_kind(docs, "Deployment") if name_of(d) == app]
        assert deployment["spec"]["replicas"] == 1, render
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, render
        scaling = of_kind(docs, "HorizontalPodAutoscaler") + of_kind(docs, "PodDisruptionBudget")
        assert not [d for d in scaling if name_of(d) == app], render


def test_mongodb_folder_is_a_statefulset_with_storage_and_headless_service() -> None:
    docs = rendered("base/mongodb")
    (statefulset,) = of_kind(docs, "StatefulSet")
    assert statefulset["spec"]["volumeClaimTemplates"], "no PersistentVolumeClaim template"
    (service,) = of_kind(docs, "Service")
    assert service["spec"]["clusterIP"] == "None"
    assert statefulset["spec"]["serviceName"] == name_of(service)
    assert not of_kind(docs, "HorizontalPodAutoscaler")


@pytest.mark.parametrize("render", RENDERS)
def test_everything_lands_in_the_petstore_namespace(render: str) -> None:
    for doc in rendered(render):
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == "petstore", (doc["kind"], name_of(doc))


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_pods_are_hardened(render: str) -> None:
    docs = rendered(render)
    assert workloads(docs)
    for workload in workloads(docs):
        where = f"{render}: {workload['kind']}/{name_of(workload)}"
        pod = workload["spec"]["template"]["spec"]
        pod_security = pod.get("securityContext", {})
        assert pod.get("automountServiceAccountToken") is False, where
        assert pod_security.get("seccompProfile", {}).get("type") == "RuntimeDefault", where
        for container in containers(workload):
            security = {**pod_security, **container.get("securityContext", {})}
            assert security.get("runAsNonRoot") is True, where
            uid = security.get("runAsUser")
            assert isinstance(uid, int), f"{where}: runAsUser must be a number"
            assert uid > 0, f"{where}: runAsUser must not be root"
            assert security.get("readOnlyRootFilesystem") is True, where
            assert security.get("allowPrivilegeEscalation") is False, where
            assert security.get("capabilities", {}).get("drop") == ["ALL"], where


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_containers_have_requests_limits_and_probes(render: str) -> None:
    for workload in workloads(rendered(render)):
        for container in containers(workload):
            where = f"{render}: {name_of(workload)}/{container['name']}"
            resources = container.get("resources", {})
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(bound, {})), f"{where}: {bound}"
            assert "livenessProbe" in container, where
            assert "readinessProbe" in container, where
            image = container["image"]
            assert ":" in image.rsplit("/", 1)[-1] or "@" in image, f"{where}: untagged image {image}"
            assert not image.endswith(":latest"), where


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_read_only_root_has_a_writable_tmp(render: str) -> None:
    for workload in workloads(rendered(render)):
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
        for container in containers(workload):
            mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{name_of(workload)}: no /tmp"
            assert "emptyDir" in volumes[mounts["/tmp"]], f"{name_of(workload)}: /tmp is not an emptyDir"


@pytest.mark.parametrize("app", SERVICES)
def test_grpc_services_use_native_grpc_readiness_on_their_port(app: str) -> None:
    (deployment,) = of_kind(rendered(f"base/{app}"), "Deployment")
    (container,) = containers(deployment)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": GRPC_PORTS[app], "metrics": 9090}
    assert container["readinessProbe"]["grpc"]["port"] == GRPC_PORTS[app]
    config = _config_of(rendered(f"base/{app}"), deployment)
    assert config["GRPC_LISTEN_ADDR"] == f"0.0.0.0:{GRPC_PORTS[app]}"


def test_gateway_probes_livez_and_readyz() -> None:
    (deployment,) = of_kind(rendered("base/gateway"), "Deployment")
    (container,) = containers(deployment)
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_gateway_metrics_are_on_their_own_port_which_the_ingress_never_routes_to() -> None:
    docs = rendered("base/gateway")
    (deployment,) = of_kind(docs, "Deployment")
    (container,) = containers(deployment)
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"http": 8080, "metrics": 9090}
    assert _config_of(docs, deployment)["METRICS_PORT"] == "9090"
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert (annotations["prometheus.io/port"], annotations["prometheus.io/path"]) == ("9090", "/metrics")
    (ingress,) = of_kind(docs, "Ingress")
    backends = [
        path["backend"]["service"]["port"]
        for rule in ingress["spec"]["rules"]
        for path in rule["http"]["paths"]
    ]
    assert backends
    assert all(port in ({"name": "http"}, {"number": 8080}) for port in backends)


def _config_of(docs: list[Doc], workload: Doc) -> dict[str, str]:
    """The merged data of the ConfigMaps a workload's containers take with envFrom."""
    maps = {name_of(cm): cm.get("data", {}) for cm in of_kind(docs, "ConfigMap")}
    data: dict[str, str] = {}
    for container in containers(workload):
        for source in container.get("envFrom", []):
            name = source["configMapRef"]["name"]
            assert name in maps, f"{name_of(workload)} refers to a ConfigMap {name} not in the render"
            data.update(maps[name])
    return data


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_grace_period_outlasts_graceful_stop(render: str) -> None:
    docs = rendered(render)
    for workload in of_kind(docs, "Deployment"):
        grace = float(_config_of(docs, workload).get("GRACE_SECONDS", "10"))
        pod = workload["spec"]["template"]["spec"]
        pre_stop = containers(workload)[0].get("lifecycle", {}).get("preStop", {})
        sleep = pre_stop.get("sleep", {}).get("seconds", 0)
        assert pod["terminationGracePeriodSeconds"] >= grace + sleep + 5, name_of(workload)


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_secrets_come_from_secret_refs_only(render: str) -> None:
    docs = rendered(render)
    for cm in of_kind(docs, "ConfigMap"):
        assert not set(SECRET_ENV) & set(cm.get("data", {})), f"secret setting in ConfigMap {name_of(cm)}"
    for workload in workloads(docs):
        for container in containers(workload):
            for var in container.get("env", []):
                if var["name"] in SECRET_ENV:
                    assert "secretKeyRef" in var.get("valueFrom", {}), f"{name_of(workload)}: {var['name']}"
                    assert "value" not in var


def test_secret_references_per_app() -> None:
    """The Secrets deploy/k8s/README.md tells operators to create, and nothing else."""
    expected = {
        "gateway": {
            ("petstore-api-keys", "api-keys"),
            ("petstore-session", "session-secret"),
            ("petstore-session", "previous-session-secrets"),
            ("gateway-caller-key", "signing-key"),
        },
        "pet-service": {("pet-service-mongodb", "uri")},
        "order-service": {("order-service-mongodb", "uri"), ("order-service-caller-key", "signing-key")},
        "webhook-service": {
            ("webhook-service-mongodb", "uri"),
            ("webhook-service-caller-key", "signing-key"),
        },
        "user-service": {
            ("user-service-mongodb", "uri"),
            ("petstore-session", "session-secret"),
            ("petstore-session", "previous-session-secrets"),
        },
    }
    for app, refs in expected.items():
        (deployment,) = of_kind(rendered(f"base/{app}"), "Deployment")
        found = {
            (var["valueFrom"]["secretKeyRef"]["name"], var["valueFrom"]["secretKeyRef"]["key"])
            for var in containers(deployment)[0].get("env", [])
            if "secretKeyRef" in var.get("valueFrom", {})
        }
        assert found == refs, app
    readme = (K8S / "README.md").read_text()
    for refs in expected.values():
        for secret, key in refs:
            assert f"`{secret}`" in readme, f"README.md does not explain the Secret {secret}"
            assert f"--from-literal={key}=" in readme, f"README.md does not explain {secret}/{key}"


CALLER_KEYS_CONFIGMAP = "petstore-caller-keys"


def _process(app: str) -> str:
    return DEPLOYABLES[app].process


@pytest.mark.parametrize("app", APPS)
def test_callers_sign_and_services_trust_as_the_local_stack_does(app: str) -> None:
    """Who signs (CALLER_SIGNING_KEY, from the team's own Secret) and whom each service trusts
    (TRUSTED_CALLER_KEYS, one entry of the ConfigMap petstore-caller-keys per trusted issuer)
    are those of petstore_devstack.signing, which the local stacks and the e2e suite run."""
    (deployment,) = of_kind(rendered(f"base/{app}"), "Deployment")
    env = {var["name"]: var for var in containers(deployment)[0].get("env", [])}
    signs = _process(app) in SIGNER_PROCESSES
    assert ("CALLER_SIGNING_KEY" in env) == signs, app
    if signs:
        assert env["CALLER_SIGNING_KEY"]["valueFrom"]["secretKeyRef"] == {
            "name": f"{app}-caller-key",
            "key": "signing-key",
        }
    trusted = TRUSTED_ISSUERS.get(_process(app), ())
    assert ("TRUSTED_CALLER_KEYS" in env) == bool(trusted), app
    if trusted:
        variables = [issuer.upper().replace("-", "_") + "_CALLER_KEYS" for issuer in trusted]
        assert env["TRUSTED_CALLER_KEYS"]["value"] == ",".join(f"$({var})" for var in variables)
        for issuer, var in zip(trusted, variables, strict=True):
            assert env[var]["valueFrom"]["configMapKeyRef"] == {"name": CALLER_KEYS_CONFIGMAP, "key": issuer}
        names = list(env)
        assert all(names.index(var) < names.index("TRUSTED_CALLER_KEYS") for var in variables), (
            "$(VAR) expands only variables defined before it"
        )
        config = _config_of(rendered(f"base/{app}"), deployment)
        assert config["CALLER_TOKENS"] == "required", "optional is for an upgrade only"
    readme = (K8S / "README.md").read_text()
    assert f"create configmap {CALLER_KEYS_CONFIGMAP}" in readme
    for issuer in SIGNER_PROCESSES.values():
        assert f"--from-literal={issuer}=" in readme, f"README.md does not explain the entry {issuer}"


@pytest.mark.parametrize("render", RENDERS)
def test_no_secret_objects_are_rendered(render: str) -> None:
    assert not of_kind(rendered(render), "Secret")


def test_no_secret_manifests_or_generators_in_git() -> None:
    for path in sorted((REPO / "deploy").rglob("*.y*ml")):
        text = path.read_text()
        assert "secretGenerator" not in text, path
        for doc in yaml.load_all(text, ComposeLoader):  # safe, plus Compose's !reset
            if isinstance(doc, dict) and doc.get("kind") == "Secret":
                assert not doc.get("data"), f"Secret with data in {path}"
                assert not doc.get("stringData"), f"Secret with data in {path}"


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_every_service_selects_a_workload_and_its_ports_exist(render: str) -> None:
    docs = rendered(render)
    for service in of_kind(docs, "Service"):
        selector = {"matchLabels": service["spec"]["selector"]}
        matches = [w for w in workloads(docs) if selects(selector, pod_labels(w))]
        assert matches, f"Service {name_of(service)} selects no Deployment/StatefulSet in {render}"
        for port in service["spec"]["ports"]:
            assert port.get("name"), f"Service {name_of(service)}: unnamed port"
            target = port.get("targetPort", port["port"])
            for workload in matches:
                container_ports = [p for c in containers(workload) for p in c.get("ports", [])]
                names = {p.get("name") for p in container_ports}
                numbers = {p["containerPort"] for p in container_ports}
                assert target in names | numbers, f"{name_of(service)}: no container port {target}"


@pytest.mark.parametrize("render", WORKLOAD_RENDERS)
def test_hpas_and_pdbs_target_existing_workloads(render: str) -> None:
    docs = rendered(render)
    present = {(w["kind"], name_of(w)) for w in workloads(docs)}
    for hpa in of_kind(docs, "HorizontalPodAutoscaler"):
        assert hpa["apiVersion"] == "autoscaling/v2"
        ref = hpa["spec"]["scaleTargetRef"]
        assert (ref["kind"], ref["name"]) in present, f"HPA {name_of(hpa)} targets a missing {ref}"
        assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    for pdb in of_kind(docs, "PodDisruptionBudget"):
        assert any(selects(pdb["spec"]["selector"], pod_labels(w)) for w in workloads(docs)), name_of(pdb)
    scaled = {hpa["spec"]["scaleTargetRef"]["name"] for hpa in of_kind(docs, "HorizontalPodAutoscaler")}
    for deployment in of_kind(docs, "Deployment"):
        if name_of(deployment) in SINGLE_REPLICA:
            continue  # test_the_webhook_service_runs_exactly_one_pod_never_two_at_once
        assert name_of(deployment) in scaled, f"{name_of(deployment)} has no HPA"
        # The HPA owns the count; a replicas field would undo its scaling on every apply.
        assert "replicas" not in deployment["spec"], name_of(deployment)


def test_overlays_set_images_replicas_and_resources(overlays: dict[str, list[Doc]]) -> None:
    def images(docs: list[Doc]) -> set[str]:
        return {c["image"] for w in of_kind(docs, "Deployment") for c in containers(w)}

    versions = {app: current_version(DEPLOYABLES[app]) for app in APPS}
    registry = PROD_SETTINGS["IMAGE_REGISTRY"]
    assert images(overlays["dev"]) == {f"petstore/{app}:{versions[app]}" for app in APPS}
    assert images(overlays["prod"]) == {f"{registry}/{app}:{versions[app]}" for app in APPS}
    min_replicas = {
        name: {hpa["spec"]["minReplicas"] for hpa in of_kind(docs, "HorizontalPodAutoscaler")}
        for name, docs in overlays.items()
    }
    assert min_replicas == {"dev": {1}, "prod": {3}}
    memory = {
        name: {c["resources"]["limits"]["memory"] for w in of_kind(docs, "Deployment") for c in containers(w)}
        for name, docs in overlays.items()
    }
    assert memory == {"dev": {"256Mi"}, "prod": {"512Mi"}}
    for docs in overlays.values():
        (namespace,) = of_kind(docs, "Namespace")
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("app", APPS)
def test_each_team_folder_names_its_deployables_version(app: str) -> None:
    """The version lives in <app>/pyproject.toml; the folder a team applies must deploy it."""
    (deployment,) = of_kind(rendered(f"base/{app}"), "Deployment")
    (container,) = containers(deployment)
    assert container["image"] == f"petstore/{app}:{current_version(DEPLOYABLES[app])}"


def test_prod_has_no_dev_database_and_its_ingress_serves_the_settings_host_over_tls(
    overlays: dict[str, list[Doc]],
) -> None:
    prod = overlays["prod"]
    assert not of_kind(prod, "StatefulSet")
    assert "prod-settings" not in {name_of(c) for c in of_kind(prod, "ConfigMap")}  # local-config
    (ingress,) = of_kind(prod, "Ingress")
    host = PROD_SETTINGS["PUBLIC_HOST"]
    assert [rule["host"] for rule in ingress["spec"]["rules"]] == [host]
    assert ingress["spec"]["tls"] == [{"hosts": [host], "secretName": "petstore-tls"}]


def test_overlays_compose_every_base_folder(overlays: dict[str, list[Doc]]) -> None:
    for name, docs in overlays.items():
        apps = {pod_labels(w)["app.kubernetes.io/name"] for w in workloads(docs)}
        assert apps == ({*APPS, "mongodb"} if name == "dev" else set(APPS)), name
        assert of_kind(docs, "NetworkPolicy"), name
        assert of_kind(docs, "Ingress"), name


def _config(docs: list[Doc], app: str) -> dict[str, str]:
    (deployment,) = [d for d in of_kind(docs, "Deployment") if name_of(d) == app]
    return _config_of(docs, deployment)


def test_service_addresses_point_at_services_in_the_render(overlays: dict[str, list[Doc]]) -> None:
    for docs in overlays.values():
        services = {name_of(s): {p["port"] for p in s["spec"]["ports"]} for s in of_kind(docs, "Service")}
        gateway = _config(docs, "gateway")
        order = _config(docs, "order-service")
        webhook = _config(docs, "webhook-service")
        for addr in (
            gateway["PET_SERVICE_ADDR"],
            gateway["ORDER_SERVICE_ADDR"],
            gateway["USER_SERVICE_ADDR"],
            gateway["WEBHOOK_SERVICE_ADDR"],
            order["PET_SERVICE_ADDR"],
            webhook["PET_SERVICE_ADDR"],
            webhook["ORDER_SERVICE_ADDR"],
        ):
            # dns:///: the channel resolves every pod behind the (headless) name.
            assert addr.startswith("dns:///"), addr
            host, port = addr.removeprefix("dns:///").rsplit(":", 1)
            assert int(port) in services[host], addr


@pytest.mark.parametrize("render", [f"base/{app}" for app in SERVICES] + [f"overlays/{o}" for o in OVERLAYS])
def test_grpc_services_are_headless(render: str) -> None:
    """A ClusterIP would pin each client's one HTTP/2 connection to one pod: the name must
    resolve to every ready pod, for the clients' round_robin policy to spread calls."""
    grpc_services = [s for s in of_kind(rendered(render), "Service") if name_of(s) in SERVICES]
    assert grpc_services
    for service in grpc_services:
        assert service["spec"].get("clusterIP") == "None", name_of(service)
        # Only ready pods resolve: one that stops or loses its database leaves the rotation.
        assert not service["spec"].get("publishNotReadyAddresses"), name_of(service)


@pytest.mark.parametrize("app", SERVICES)
def test_grpc_servers_age_their_connections(app: str) -> None:
    """Clients reconnect and re-resolve now and then, so pods the HPA adds get calls."""
    docs = rendered(f"base/{app}")
    (deployment,) = of_kind(docs, "Deployment")
    assert float(_config_of(docs, deployment)["GRPC_MAX_CONNECTION_AGE_SECONDS"]) > 0


def test_kustomization_files_list_only_existing_files() -> None:
    for kustomization in K8S.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kustomization.read_text())
        for resource in spec.get("resources", []) + spec.get("components", []):
            if "://" in resource:  # a remote base (examples/own-repo): test_examples.py renders it
                continue
            assert (kustomization.parent / resource).exists(), f"{kustomization}: {resource}"


def test_readme_documents_per_team_apply() -> None:
    readme = (K8S / "README.md").read_text()
    for app in (*APPS, "mongodb", "network-policies"):
        assert f"deploy/k8s/base/{app}" in readme, app
    for overlay in OVERLAYS:
        assert f"deploy/k8s/overlays/{overlay}" in readme, overlay
