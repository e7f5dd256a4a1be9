"""Snakemake wrapper: re-encrypt a crypt4gh file for new recipients with crypt4gh (c4gh-go)."""

__author__ = "crypt4gh (c4gh-go) authors"
__license__ = "Apache-2.0"

import glob
import os
import subprocess
import sys

from snakemake.shell import shell  # noqa: F401 (the wrappers' convention)


def run(args, log):
    """Run crypt4gh args, its stderr to log (or ours), and fail with its status."""
    out = snakemake.output[0]
    # A run killed while writing leaves .NAME.partial-*: the job owns its
    # output, so what a killed crypt4gh left of it goes.
    d, base = os.path.split(out)
    for p in glob.glob(os.path.join(d or ".", glob.escape("." + base) + ".partial-*")):
        os.remove(p)
    cmd = ["crypt4gh"] + args
    err = open(log, "ab") if log else None
    try:
        try:
            rc = subprocess.call(cmd, stderr=err)
        except FileNotFoundError:
            msg = b"crypt4gh: not found on PATH\n"
            if err:
                err.write(msg)
            sys.stderr.write(msg.decode())
            rc = 127
        if rc != 0:
            line = "crypt4gh: exit status %d\n" % rc
            if err:
                err.write(line.encode())
            else:
                sys.stderr.write(line)
    finally:
        if err:
            err.close()
    if rc != 0:
        sys.exit(rc)


extra = snakemake.params.get("extra", "")
sk = snakemake.params.get("sk")
if not sk:
    raise ValueError("params.sk: the secret key that opens the file is required")
pks = snakemake.params.get("recipient_pk")
if not pks:
    raise ValueError("params.recipient_pk: one public key path or a list of them is required")
if isinstance(pks, (str, os.PathLike)):
    pks = [pks]
args = ["reencrypt", "--sk", str(sk)]
for pk in pks:
    args += ["--recipient_pk", str(pk)]
log = snakemake.log[0] if snakemake.log else None
run(args + extra.split() + ["-i", snakemake.input[0], "-o", snakemake.output[0]], log)
