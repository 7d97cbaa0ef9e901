"""`tnk image` with the vm backend's guest kernels and base disks, without building either (a real kernel
build takes minutes: tests/unit/vm_boot_smoke_test.cc boots one). Kernels and disks are made as the
directories tnk reads; their JSON fields are checked against docs/json-output.md like every document."""
import json
from pathlib import Path

from e2e_util import OK
from test_output import check_fields, doc_tables, field_tree

KERNEL = "linux-6.1.192-0123456789ab"
USAGE, NOT_FOUND = 64, 66


def cache(tnk):
    return tnk.home / ".cache" / "tnk"


def fake_kernel(tnk, kernel_id=KERNEL):
    d = cache(tnk) / "kernels" / kernel_id
    d.mkdir(parents=True)
    (d / "vmlinux").write_bytes(b"\x7fELF")
    (d / "kernel.json").write_text(json.dumps({
        "schema": 1, "id": kernel_id, "release": "6.1.192", "size_bytes": 4, "built_at": 1736935800,
        "build_seconds": 370.2, "recipe_hash": "ab" * 32, "recipe": {"format": 1}}))
    return d


def fake_disk(tnk, image_id):
    disk_id = f"{image_id}-agent-ffeeddccbbaa"
    d = cache(tnk) / "disks" / disk_id
    d.mkdir(parents=True)
    (d / "base.img").write_bytes(b"")
    (d / "disk.json").write_text(json.dumps({
        "schema": 1, "id": disk_id, "image_id": image_id, "agent_sha256": "ffeeddccbbaa" + "0" * 52,
        "size_bytes": 541065216, "allocated_bytes": 197132288, "built_at": 1736935800, "build_seconds": 1.3}))
    return disk_id


def test_ls_lists_kernels_and_disks_with_documented_fields(tnk):
    fake_kernel(tnk)
    image_id = tnk.json("image", "build", "-n", "-o", "json")["id"]
    disk_id = fake_disk(tnk, image_id)
    items = tnk.json("image", "ls", "-o", "json")
    assert [(i["kind"], i["id"]) for i in items] == [("kernel", KERNEL), ("disk", disk_id)]
    check_fields(items, field_tree(doc_tables()["fields:image-ls"]))
    kernel, disk = items
    assert kernel["vmlinux"].endswith(f"/kernels/{KERNEL}/vmlinux") and kernel["release"] == "6.1.192"
    assert disk["base"].endswith(f"/disks/{disk_id}/base.img") and disk["image_id"] == image_id
    assert disk["allocated_bytes"] == 197132288 and disk["used_by"] == []
    text = tnk.run("image", "ls")
    assert text.returncode == OK
    assert "KERNEL" in text.stdout and KERNEL in text.stdout and "DISK" in text.stdout and disk_id in text.stdout
    assert tnk.run("image", "ls", "-q").stdout.split() == [KERNEL, disk_id]


def test_unusable_kernel_is_listed_with_its_problem(tnk):
    d = cache(tnk) / "kernels" / "linux-6.1.192-ffffffffffff"
    d.mkdir(parents=True)
    items = tnk.json("image", "ls", "-o", "json")
    assert items[0]["kind"] == "kernel" and "not usable" in items[0]["problem"] and items[0]["size_bytes"] is None
    check_fields(items, field_tree(doc_tables()["fields:image-ls"]))


def test_rm_removes_a_kernel_and_a_disk_and_refuses_unknown_ids(tnk):
    kernel_dir = fake_kernel(tnk)
    disk_id = fake_disk(tnk, "debian-bookworm-0123456789ab")
    assert tnk.json("image", "rm", KERNEL, disk_id, "--yes", "-o", "json") == {"removed": [KERNEL, disk_id]}
    assert not kernel_dir.exists() and not (cache(tnk) / "disks" / disk_id).exists()
    assert tnk.run("image", "rm", "linux-6.1.192-000000000000", "--yes").returncode == NOT_FOUND
    assert tnk.run("image", "rm", "../kernels", "--yes").returncode == USAGE


def test_build_dry_run_with_vm_names_the_kernel_and_the_disk(tnk):
    plan = tnk.json("image", "build", "-n", "--vm", "-o", "json")
    check_fields(plan, field_tree(doc_tables()["fields:image-build-dry-run"]))
    assert set(plan["kernel"]) == {"id", "exists", "path"} and set(plan["disk"]) == {"id", "exists", "path"}
    assert plan["kernel"]["exists"] is False
    if plan["kernel"]["id"] is not None:  # linux-source-6.1 and gcc installed (scripts/install-deps.sh)
        assert plan["kernel"]["id"].startswith("linux-6.1.")
        assert plan["kernel"]["path"] == str(cache(tnk) / "kernels" / plan["kernel"]["id"])
    assert "kernel" not in tnk.json("image", "build", "-n", "-o", "json")  # only with --vm


def test_doctor_reports_the_vm_checks_without_failing_on_them(tnk):
    result = tnk.run("doctor", "-o", "json")
    checks = {c["id"]: c for c in json.loads(result.stdout)["checks"]}
    for check_id in ("vm_kvm", "vm_qemu", "vm_virtiofsd", "vm_vsock", "vm_kernel", "vm_disk"):
        assert checks[check_id]["required"] is False
        assert checks[check_id]["status"] in ("ok", "info", "warn"), checks[check_id]
    # What vm_kvm says follows what the host has: no /dev/kvm at all (kvm_pvm may be loaded without its
    # device), or a PVM /dev/kvm that cannot run a stock guest; both mean TCG, and both say how much slower.
    summary = checks["vm_kvm"]["summary"]
    if not Path("/dev/kvm").exists():
        assert summary.startswith("no /dev/kvm") and "TCG" in summary and "8-25x slower" in summary, summary
    elif Path("/sys/module/kvm_pvm").exists() and not Path("/sys/module/kvm_intel").exists():
        assert "PVM" in summary and "8-25x slower" in summary, summary
