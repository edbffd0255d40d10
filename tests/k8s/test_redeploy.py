"""Per-team independence: the pet team redeploys its folder alone, with a new image tag, while
load runs through the gateway, and not one request fails (rolling update with maxUnavailable
0, readiness on gRPC health, preStop before SIGTERM, clients' round_robin over ready pods)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.k8s.cluster import bounded_load, kubectl, kubectl_json

REPO_ROOT = Path(__file__).resolve().parents[2]
NEW_TAG = "redeploy"
LOAD_SECONDS_MAX = 240.0


def tag_image(image: str, new_tag: str) -> str:
    """The same image under a new tag, in the cluster's containerd (no registry here): what a
    team's CI push of a new build amounts to."""
    source = f"docker.io/{image}"
    target = f"docker.io/{image.rsplit(':', 1)[0]}:{new_tag}"
    argv = ["ctr", "-n", "k8s.io", "images", "tag", "--force", source, target]
    subprocess.run(argv, check=True, capture_output=True)
    return target


async def test_pet_team_redeploys_its_folder_alone_under_load(
    base_url: str, api_key: str, pet_tag: str, tmp_path: Path
) -> None:
    tag_image("petstore/pet-service:dev", NEW_TAG)
    # The team's folder, as the team applies it, with only its image tag changed
    # (`kustomize edit set image` in its own checkout).
    folder = tmp_path / "pet-service"
    shutil.copytree(REPO_ROOT / "deploy/k8s/base/pet-service", folder)
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    kustomization["images"] = [{"name": "petstore/pet-service", "newTag": NEW_TAG}]
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))

    stop = asyncio.Event()
    load = asyncio.create_task(bounded_load(base_url, api_key, pet_tag, stop=stop))
    try:
        await asyncio.sleep(3)  # load flowing before the rollout starts
        await asyncio.to_thread(kubectl, "apply", "-k", str(folder))
        await asyncio.to_thread(kubectl, "rollout", "status", "deployment/pet-service", "--timeout=200s")
        # Old pods leave after their preStop and grace: keep the load on until they are gone.
        await asyncio.to_thread(
            kubectl,
            "wait",
            "--for=delete",
            "pod",
            "-l",
            "app.kubernetes.io/name=pet-service",
            "--field-selector",
            "status.phase=Running",
            "--timeout=1s",
            check=False,
        )
        await asyncio.sleep(20)
    finally:
        stop.set()
        result = await asyncio.wait_for(load, LOAD_SECONDS_MAX)

    images = {
        container["image"]
        for pod in kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=pet-service")["items"]
        if not pod["metadata"].get("deletionTimestamp")
        for container in pod["spec"]["containers"]
    }
    print(f"redeploy of pet-service under load: {result.sent} requests, {len(result.failed)} failed")
    assert images == {f"petstore/pet-service:{NEW_TAG}"}, images
    assert result.sent > 100, result.sent
    assert result.failed == [], result.failed[:10]
