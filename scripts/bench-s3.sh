#!/usr/bin/env bash
# bench-s3.sh: how fast is the crypt4gh command with object storage?
#
# Run by hand from anywhere in the repository:   scripts/bench-s3.sh
# (scripts/bench.sh may call it at its end).
#
# Needs Go, coreutils and versitygw v1.8.0 ($VERSITYGW, on PATH, in
# $(go env GOPATH)/bin, or in the cache of internal/s3test; install it with
# go install github.com/versity/versitygw/cmd/versitygw@v1.8.0).
# /usr/bin/time (GNU time) is optional: without it peak RSS is polled from
# /proc.
#
# It builds the command and scripts/s3plain (the AWS SDK and its transfer
# manager, nothing of crypt4gh) into a temporary folder, starts one
# versitygw on 127.0.0.1 serving a folder there, makes a 1 GiB random file,
# and prints every figure as a ratio to the plain way of doing the same
# against the same server in the same run:
#
#   upload     encrypt file -> s3:// object, against the transfer manager
#              uploading the same file (its defaults, and 16 MiB x 8 parts)
#   download   decrypt s3:// object -> file, against the transfer manager
#              downloading the plain object with parallel ranged GETs into
#              a file (8 MiB x 8, as the command; both fsync the file)
#   peak RSS   of the encrypt upload and the decrypt download, at 64 MiB
#              and 1 GiB
#   rekey      reencrypt in place of the 1 GiB object (new header, body
#              copied by the server), against a server-side CopyObject
#
# GWDIR=DIR puts versitygw's folder in a new folder in DIR instead: its multipart uploads are assembled at CompleteMultipartUpload
# with copy_file_range, a copy of every byte on ext4 or tmpfs and a
# reflink on XFS or Btrfs, which decides the rekey row (see
# docs/performance.md).
# ONLY="rekey download" (any of upload, download, rss, rekey) measures
# only those. Each timing is the best (least) of RUNS runs (default 5), the two sides
# of a ratio taking turns. It takes about ten minutes on a 2-core machine
# and 6 GiB of disk in $TMPDIR (versitygw's folder too: on a slow disk,
# TMPDIR=/dev/shm measures the client rather than the disk).
# Everything is removed on exit.
set -euo pipefail

RUNS=${RUNS:-5}
ONLY=${ONLY:-upload download rss rekey}
for w in $ONLY; do
	case $w in
	upload | download | rss | rekey) ;;
	*)
		echo "bench-s3: ONLY=\"$ONLY\": $w is none of upload, download, rss, rekey" >&2
		exit 2
		;;
	esac
done
want() { [[ " $ONLY " == *" $1 "* ]]; }
if [[ -n ${GWDIR:-} ]]; then
	GWDIR=$(cd "$GWDIR" && pwd) # before the cd into the temporary folder
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-s3.XXXXXX")
gw_pid=
gwdir=
cleanup() {
	if [[ -n $gw_pid ]]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
	if [[ -n $gwdir && $gwdir != "$tmp" ]]; then rm -rf "$gwdir"; fi
}
trap cleanup EXIT
cd "$tmp"

version=v1.8.0
gw=${VERSITYGW:-}
if [[ -z $gw ]]; then
	for c in "$(command -v versitygw || true)" "$(go env GOPATH)/bin/versitygw" "${XDG_CACHE_HOME:-$HOME/.cache}/crypt4gh-s3test/versitygw-$version/versitygw"; do
		if [[ -n $c && -x $c ]] && go version -m "$c" 2>/dev/null | grep -q "versitygw.*$version"; then gw=$c; break; fi
	done
fi
if [[ -z $gw ]]; then
	echo "bench-s3: versitygw $version not found; go install github.com/versity/versitygw/cmd/versitygw@$version" >&2
	exit 1
fi

echo "building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/crypt4gh" . && go build -o "$tmp/s3plain" ./scripts/s3plain)
c4gh=$tmp/crypt4gh
s3plain=$tmp/s3plain

port=$("$s3plain" port)
ak=AKBENCH$RANDOM$RANDOM
sk=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
gwdir=$tmp
if [[ -n ${GWDIR:-} ]]; then gwdir=$(mktemp -d "$GWDIR/c4gh-bench-s3-gw.XXXXXX"); fi
mkdir "$gwdir/data" "$gwdir/meta"
"$gw" --port "127.0.0.1:$port" --access "$ak" --secret "$sk" --quiet posix --sidecar "$gwdir/meta" "$gwdir/data" >gw.log 2>&1 &
gw_pid=$!
export AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_REGION=us-east-1
export AWS_CONFIG_FILE=$tmp/aws-config AWS_SHARED_CREDENTIALS_FILE=$tmp/aws-credentials AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN
"$s3plain" wait "$AWS_ENDPOINT_URL_S3"
"$s3plain" mb bench

"$c4gh" keygen --nocrypt --sk alice.sec --pk alice.pub >/dev/null 2>&1
GiB=$((1 << 30))
MiB=$((1 << 20))
echo "making a 1 GiB random file ..." >&2
head -c "$GiB" /dev/urandom >plain
head -c $((64 * MiB)) plain >plain64
"$s3plain" put plain bench plain
"$c4gh" encrypt --recipient_pk alice.pub -i plain64 -o s3://bench/enc64
sync

now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}

# best CMD...: the least wall time in seconds of RUNS runs of CMD, with
# the outputs removed and the page cache written back in between.
best() {
	local i t0 t1 d min=
	for ((i = 0; i < RUNS; i++)); do
		rm -f out
		sync
		t0=$(now_us)
		"$@"
		t1=$(now_us)
		d=$((t1 - t0))
		if [[ -z $min || $d -lt $min ]]; then min=$d; fi
	done
	rm -f out
	awk -v us="$min" 'BEGIN { printf "%.4f", us / 1e6 }'
}

# pair A B: RUNS rounds of A then B, each with the outputs removed and the
# page cache written back before it; sets ta and tb to the least wall time
# of each, in seconds. Taking turns, both sides see the same load of a
# shared machine.
pair() {
	local i w t0 t1 d mina= minb=
	for ((i = 0; i < RUNS; i++)); do
		for w in "$1" "$2"; do
			rm -f out
			sync
			t0=$(now_us)
			"$w"
			t1=$(now_us)
			d=$((t1 - t0))
			if [[ $w == "$1" ]]; then
				if [[ -z $mina || $d -lt $mina ]]; then mina=$d; fi
			elif [[ -z $minb || $d -lt $minb ]]; then
				minb=$d
			fi
		done
	done
	rm -f out
	ta=$(awk -v us="$mina" 'BEGIN { printf "%.4f", us / 1e6 }')
	tb=$(awk -v us="$minb" 'BEGIN { printf "%.4f", us / 1e6 }')
}

# rss CMD...: the peak RSS of CMD in MiB (the larger of 2 runs).
rss() {
	local i kb max=0
	for i in 1 2; do
		rm -f out
		if [[ -x /usr/bin/time ]]; then
			/usr/bin/time -f %M -o time.txt "$@" >/dev/null
			kb=$(tail -1 time.txt)
		else
			"$@" >/dev/null &
			local pid=$! peak=0 v
			while kill -0 "$pid" 2>/dev/null; do
				v=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
				if ((${v:-0} > peak)); then peak=$v; fi
				sleep 0.02
			done
			wait "$pid"
			kb=$peak
		fi
		if ((kb > max)); then max=$kb; fi
	done
	rm -f out
	awk -v kb="$max" 'BEGIN { printf "%.1f MiB", kb / 1024 }'
}

up_c4gh() { "$c4gh" encrypt --recipient_pk alice.pub --force -i plain -o s3://bench/enc; }
up_tm() { "$s3plain" put plain bench plain-tm; }
up_tm16() { "$s3plain" put -part 16 -conc 8 plain bench plain-tm; }
down_c4gh() { "$c4gh" decrypt --sk alice.sec -i s3://bench/enc -o out; }
down_tm() { "$s3plain" get -part 8 -conc 8 bench plain out; }
rekey() { "$c4gh" reencrypt --sk alice.sec --recipient_pk alice.pub --force -i s3://bench/enc -o s3://bench/enc; }
copy() { "$s3plain" copy bench enc copy; }

# Correctness first.
up_c4gh
down_c4gh && cmp -s out plain || { echo "bench-s3: the round trip through s3 differs" >&2; exit 1; }
rm -f out
rekey && "$c4gh" decrypt --sk alice.sec -i s3://bench/enc -o out && cmp -s out plain || { echo "bench-s3: the rekey in place broke the object" >&2; exit 1; }
rm -f out

echo "measuring, best of $RUNS ..." >&2
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mb() { awk -v s="$1" -v n="$GiB" 'BEGIN { printf "%.0f MB/s", n / s / 1e6 }'; }

if want upload; then
	pair up_tm up_c4gh
	t_up_tm=$ta t_up=$tb
	t_up_tm16=$(best up_tm16)
fi
if want download; then
	pair down_tm down_c4gh
	t_down_tm=$ta t_down=$tb
fi
if want rekey; then
	pair copy rekey
	t_copy=$ta t_rekey=$tb
fi
if want rss; then
	rss_up64=$(rss "$c4gh" encrypt --recipient_pk alice.pub --force -i plain64 -o s3://bench/rss)
	rss_up1g=$(rss "$c4gh" encrypt --recipient_pk alice.pub --force -i plain -o s3://bench/rss)
	rss_down64=$(rss "$c4gh" decrypt --sk alice.sec -i s3://bench/enc64 -o out)
	rss_down1g=$(rss "$c4gh" decrypt --sk alice.sec -i s3://bench/enc -o out)
fi

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "crypt4gh bench-s3, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs (${cpu:-unknown}), $(go env GOVERSION), versitygw $version on 127.0.0.1"
echo "versitygw's folder on $(df -PT "$gwdir" | awk 'NR == 2 { print $2 }') ($gwdir)"
echo "1 GiB random file, each time the best of $RUNS runs"
echo
printf '%-46s %10s %12s %22s   %s\n' "measure" "time" "rate" "ratio" "target"
want upload && printf '%-46s %9ss %12s %22s   %s\n' "upload, transfer manager (defaults)" "$t_up_tm" "$(mb "$t_up_tm")" "1" ""
want upload && printf '%-46s %9ss %12s %22s   %s\n' "upload, transfer manager (16 MiB x 8)" "$t_up_tm16" "$(mb "$t_up_tm16")" "" ""
want upload && printf '%-46s %9ss %12s %22s   %s\n' "encrypt file -> s3://" "$t_up" "$(mb "$t_up")" "$(ratio "$t_up_tm" "$t_up") of transfer manager" ">= 0.90"
want download && printf '%-46s %9ss %12s %22s   %s\n' "download, transfer manager (8 MiB x 8)" "$t_down_tm" "$(mb "$t_down_tm")" "1" ""
want download && printf '%-46s %9ss %12s %22s   %s\n' "decrypt s3:// -> file" "$t_down" "$(mb "$t_down")" "$(ratio "$t_down_tm" "$t_down") of transfer manager" ">= 0.90"
want rss && printf '%-46s %10s %12s %22s   %s\n' "peak RSS encrypt -> s3://, 64 MiB" "" "$rss_up64" "" "<= 128 MiB"
want rss && printf '%-46s %10s %12s %22s   %s\n' "peak RSS encrypt -> s3://, 1 GiB" "" "$rss_up1g" "" "<= 128 MiB, same"
want rss && printf '%-46s %10s %12s %22s   %s\n' "peak RSS decrypt s3:// ->, 64 MiB" "" "$rss_down64" "" "<= 128 MiB"
want rss && printf '%-46s %10s %12s %22s   %s\n' "peak RSS decrypt s3:// ->, 1 GiB" "" "$rss_down1g" "" "<= 128 MiB, same"
want rekey && printf '%-46s %9ss %12s %22s   %s\n' "CopyObject of 1 GiB (server side)" "$t_copy" "" "1" ""
want rekey && printf '%-46s %9ss %12s %22s   %s\n' "reencrypt in place of 1 GiB" "$t_rekey" "" "$(ratio "$t_rekey" "$t_copy") x CopyObject" "<= 1.20"
true
