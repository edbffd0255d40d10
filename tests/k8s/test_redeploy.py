"""Each team ships alone: while load runs through the gateway (which, with the other services,
stays at the working tree's release), the pet team rolls its Deployment back to its previous
release (deploy/releases.toml: its folder and image as they were at that commit) and forward
again to the working tree's, each by applying its own folder alone, and not one request fails
(rolling update with maxUnavailable 0, readiness on gRPC health, preStop before SIGTERM,
clients' round_robin over ready pods)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from petstore_devstack.releases import DEPLOYABLES, current_version, extract, image_tags, previous_release
from tests.k8s.cluster import bounded_load, kubectl, kubectl_json

REPO_ROOT = Path(__file__).resolve().parents[2]
PET = DEPLOYABLES["pet-service"]
FOLDER = "deploy/k8s/base/pet-service"
LOAD_SECONDS_MAX = 400.0


def previous_folder(where: Path) -> Path:
    """The pet team's folder as it was at its previous release, naming the image e2e.sh built
    from that commit (`<version>-<commit>`: a tag of its own even when the working tree's
    version is still the same)."""
    extract(previous_release(PET).commit, [FOLDER], where)
    folder = where / FOLDER
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    kustomization["images"] = [{"name": "petstore/pet-service", "newTag": image_tags(PET, previous=True)[1]}]
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


def running_images() -> set[str]:
    return {
        container["image"]
        for pod in kubectl_json("get", "pods", "-l", "app.kubernetes.io/name=pet-service")["items"]
        if not pod["metadata"].get("deletionTimestamp")
        for container in pod["spec"]["containers"]
    }


async def roll_out(folder: Path) -> None:
    """Apply the team's folder alone, as the team does, and wait until only its pods serve."""
    await asyncio.to_thread(kubectl, "apply", "-k", str(folder))
    await asyncio.to_thread(kubectl, "rollout", "status", "deployment/pet-service", "--timeout=200s")
    # Old pods leave after their preStop and grace: keep the load on until they are gone.
    await asyncio.sleep(20)


async def test_pet_team_rolls_back_to_its_previous_release_and_forward_under_load(
    base_url: str, api_key: str, pet_tag: str, tmp_path: Path
) -> None:
    previous = previous_folder(tmp_path)
    previous_image = f"petstore/pet-service:{image_tags(PET, previous=True)[1]}"
    current_image = f"petstore/pet-service:{current_version(PET)}"

    stop = asyncio.Event()
    # Two rollouts of up to three pods each: room for a few minutes of load.
    load = asyncio.create_task(bounded_load(base_url, api_key, pet_tag, stop=stop, max_requests=100_000))
    seen: list[set[str]] = []
    try:
        await asyncio.sleep(3)  # load flowing before the rollout starts
        await roll_out(previous)
        seen.append(running_images())
        await roll_out(REPO_ROOT / FOLDER)
        seen.append(running_images())
    finally:
        stop.set()
        result = await asyncio.wait_for(load, LOAD_SECONDS_MAX)

    print(
        f"pet-service back to {previous_image} and forward to {current_image} under load: "
        f"{result.sent} requests, {len(result.failed)} failed"
    )
    assert seen == [{previous_image}, {current_image}], seen
    assert result.sent > 100, result.sent
    assert result.failed == [], result.failed[:10]
