#!/usr/bin/env bash
# bench-region.sh: what does a region of a large encrypted BAM cost?
#
# Run by hand from anywhere in the repository:   scripts/bench-region.sh
# (scripts/bench.sh calls it with REGION=1).
#
# Needs Go, coreutils and samtools, and about 3 × SIZE_MB in $TMPDIR.
#
# It builds the command as a release is built and scripts/samgen, makes a
# sorted, indexed BAM of about SIZE_MB MiB (default 1024; reads of 100
# random bases on two references) with samtools, encrypts it and its
# index, and prints each figure as a ratio to something measured in the
# same run:
#
#   decrypt --region   a region of about 1 MiB of the BAM to a file:
#                      its time against the start-up of the command
#                      (crypt4gh --version), and the work beyond it in ms
#   splice --region    the same region as a crypt4gh file for another key:
#                      its time against copying the bytes of the planned
#                      segments (head -c of that many bytes to a file)
#   planned            the bytes of the segments read, against the file
#
# Each time is the best of RUNS runs (default 5). The bytes that a region
# of an object costs over S3 are checked by the tests
# (internal/cli TestRegionObject: at most twice the planned bytes, the
# index and a bounded read-ahead).
set -euo pipefail

RUNS=${RUNS:-5}
SIZE_MB=${SIZE_MB:-1024}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-region.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
command -v samtools >/dev/null || { echo "bench-region: samtools is needed" >&2; exit 1; }

echo "bench-region: building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -tags urfave_cli_no_docs -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/samgen" ./scripts/samgen)
c4gh=$tmp/crypt4gh

# About 36 bytes of BAM a read (random bases, constant qualities).
reads=$((SIZE_MB * 1024 * 1024 / 36))
echo "bench-region: making a BAM of $reads reads ..." >&2
./samgen -reads "$reads" | samtools view -@ 2 -b -o reads.bam -
samtools index reads.bam
"$c4gh" keygen --sk me.sec --pk me.pub --nocrypt -f >/dev/null
"$c4gh" keygen --sk them.sec --pk them.pub --nocrypt -f >/dev/null
"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam -o reads.bam.c4gh
"$c4gh" encrypt --recipient_pk me.pub -q -i reads.bam.bai -o reads.bam.bai.c4gh
rm reads.bam.bai

# A region of about 1 MiB of BAM: the references are samgen's, 1e8 bases
# each, with reads spread evenly, so half the BAM spans 1e8 bases.
bam=$(stat -c %s reads.bam)
span=$((100000000 * (1 << 20) / (bam / 2)))
region="chr1:50000000-$((50000000 + span))"

# best CMD...: the best wall time in ms of RUNS runs of CMD.
best() {
	local b=
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		local ms=$(((t1 - t0) / 1000))
		if [[ -z $b || $ms -lt $b ]]; then b=$ms; fi
	done
	echo "$b" # microseconds
}

start=$(best sh -c "'$c4gh' --version > /dev/null")
# To /dev/null: the work, not the fsync of a committed file.
dec=$(best sh -c "'$c4gh' decrypt --sk me.sec --region '$region' -i reads.bam.c4gh > /dev/null")
"$c4gh" decrypt --sk me.sec --region "$region" -i reads.bam.c4gh -o r.bam -f
plan=$("$c4gh" inspect --sk me.sec --region "$region" reads.bam.c4gh)
planned=$(sed -n 's/.*read: \([0-9]*\) bytes.*/\1/p' <<<"$plan")
spl=$(best "$c4gh" splice --sk me.sec --recipient_pk them.pub --region "$region" -i reads.bam.c4gh -o r.bam.c4gh -f)
copy=$(best sh -c "head -c $planned reads.bam.c4gh > copy && sync copy")
size=$(stat -c %s reads.bam.c4gh)
out=$(stat -c %s r.bam)

samtools quickcheck r.bam
printf 'region %s of a %d MiB BAM (%d bytes of BAM out)\n' "$region" "$((size >> 20))" "$out"
awk -v s="$start" -v d="$dec" -v p="$spl" -v c="$copy" -v pl="$planned" -v sz="$size" 'BEGIN {
	printf "  decrypt --region   %.2f x start-up (--version); %.1f ms of work beyond it\n", d / s, (d - s) / 1000
	printf "  splice --region    %.2f x copying the planned segments\n", p / c
	printf "  planned            %d bytes: %.4f of the file\n", pl, pl / sz
}'
