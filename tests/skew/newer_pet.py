"""The Pet of a release that adds one field (`string nickname = 8;`), for the skew tests: as
generated code for a real pet service to run on (generate_newer_protos), and as a message class
in a private descriptor pool for this process to write and read it (NewerPet), beside the
working tree's own Pet."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from petstore.pet.v1 import pet_pb2

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTOS = REPO_ROOT / "protos"
ADDED_FIELD = "nickname"
ADDED_NUMBER = max(field.number for field in pet_pb2.Pet.DESCRIPTOR.fields) + 1
"""The next number of Pet: the field a newer release adds."""


def generate_newer_protos(dest: Path) -> Path:
    """The contract's Python code with Pet's added field, generated into `dest`/python (the
    working tree's protos but for that line); the folder to put first on a PYTHONPATH."""
    source = dest / "protos"
    shutil.copytree(PROTOS / "petstore", source / "petstore")
    pet_proto = source / "petstore" / "pet" / "v1" / "pet.proto"
    text, added = re.subn(
        r"^(message Pet \{\n(?:.*\n)*?)\}",
        rf"\1  string {ADDED_FIELD} = {ADDED_NUMBER};\n}}",
        pet_proto.read_text(),
        count=1,
        flags=re.MULTILINE,
    )
    assert added == 1, "message Pet not found in pet.proto"
    pet_proto.write_text(text)
    out = dest / "python"
    out.mkdir()
    protos = sorted(str(path.relative_to(source)) for path in source.rglob("*.proto"))
    subprocess.run(
        [
            *(sys.executable, "-m", "grpc_tools.protoc", "-I", ".", "-I", str(PROTOS / "third_party")),
            *(f"--python_out={out}", f"--grpc_python_out={out}", *protos),
        ],
        cwd=source,
        check=True,
    )
    for folder in [out / "petstore", *(out / "petstore").rglob("*")]:
        if folder.is_dir():
            (folder / "__init__.py").touch()
    return out


def _newer_pet_class() -> type[Message]:
    """Pet with the added field, in a pool of its own (the field rules, which this process
    does not need to read, are left out)."""
    file = descriptor_pb2.FileDescriptorProto()
    pet_pb2.DESCRIPTOR.CopyToProto(file)
    file.name = "skew/newer_pet.proto"
    del file.dependency[:]
    for message in file.message_type:
        for field in message.field:
            field.ClearField("options")
    pet = next(message for message in file.message_type if message.name == "Pet")
    pet.field.add(
        name=ADDED_FIELD,
        json_name=ADDED_FIELD,
        number=ADDED_NUMBER,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("petstore.pet.v1.Pet"))


NewerPet = _newer_pet_class()


def as_sent_by_a_newer_client(newer: Message) -> pet_pb2.Pet:
    """The working tree's Pet carrying exactly the bytes a newer client sends (the added field
    as an unknown one, which protobuf keeps and sends on)."""
    return pet_pb2.Pet.FromString(newer.SerializeToString())


def as_read_by_a_newer_client(pet: pet_pb2.Pet) -> Message:
    """`pet` as a newer client reads it (the added field, if the bytes carry it)."""
    return NewerPet.FromString(pet.SerializeToString())
