#!/usr/bin/env bash
# bench-upload.sh: what does `crypt4gh encrypt -o s3://…` cost the client?
#
# Run by hand from anywhere in the repository:   scripts/bench-upload.sh
#
# Needs Go, coreutils and versitygw v1.8.0 ($VERSITYGW, on PATH, in
# $(go env GOPATH)/bin, or in the cache of internal/s3test; install it with
# go install github.com/versity/versitygw/cmd/versitygw@v1.8.0). CPU times
# come from bash's own `time` (user + sys of the command), nothing else.
#
# It builds the command as a release is built (CGO_ENABLED=0, -trimpath,
# -s -w, the tag urfave_cli_no_docs), scripts/s3plain (the AWS SDK's
# transfer manager, nothing of crypt4gh) and scripts/ceiling into a
# temporary folder, starts one versitygw on 127.0.0.1 serving a folder
# there, makes a 1 GiB random file, and measures, the commands taking
# turns so that a shared machine loads them alike:
#
#   encrypt      crypt4gh encrypt -i 1GiB -o s3://…: client CPU seconds per
#                GiB (user + sys of the crypt4gh process) and wall time
#   upload       the transfer manager uploading the same plaintext, at the
#                part size and concurrency that the command uses for 1 GiB
#                (16 MiB x 5) and at its defaults: CPU per GiB, wall time
#   seal         the seal loop alone (scripts/ceiling, 1 GiB): CPU per GiB
#
# and prints the upload row: the command's CPU per GiB against the
# transfer manager's plus the seal loop's, the bound on a machine whose
# cores the server shares (every byte is read, sealed and sent; the server
# works on the same cores), and its wall time against the plain upload.
# Every figure is a ratio within the run; the times are the least of RUNS
# runs (default 5). With PREV=REV (a git revision) the command of that
# version is measured in the same rounds and compared. TMPDIR=/dev/shm
# keeps versitygw's disk out of the wall times. Everything is removed on
# exit.
set -euo pipefail

RUNS=${RUNS:-5}
PREV=${PREV:-}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/c4gh-bench-upload.XXXXXX")
gw_pid=
cleanup() {
	if [[ -n $gw_pid ]]; then kill "$gw_pid" 2>/dev/null || true; wait "$gw_pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
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
	echo "bench-upload: versitygw $version not found; go install github.com/versity/versitygw/cmd/versitygw@$version" >&2
	exit 1
fi

flags=(-trimpath -ldflags="-s -w" -tags urfave_cli_no_docs)
echo "building in $tmp ..." >&2
(cd "$root" && CGO_ENABLED=0 go build "${flags[@]}" -o "$tmp/crypt4gh" . &&
	go build -o "$tmp/s3plain" ./scripts/s3plain && go build -o "$tmp/ceiling" ./scripts/ceiling)
c4gh=$tmp/crypt4gh
s3plain=$tmp/s3plain
if [[ -n $PREV ]]; then
	echo "building $PREV ..." >&2
	mkdir "$tmp/prevsrc"
	git -C "$root" archive "$PREV" | tar -x -C "$tmp/prevsrc"
	(cd "$tmp/prevsrc" && CGO_ENABLED=0 go build "${flags[@]}" -o "$tmp/crypt4gh-prev" .)
	rm -rf "$tmp/prevsrc"
fi

port=$("$s3plain" port)
ak=AKBENCH$RANDOM$RANDOM
sk=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir gw gw/data gw/meta
"$gw" --port "127.0.0.1:$port" --access "$ak" --secret "$sk" --quiet posix --sidecar "$tmp/gw/meta" "$tmp/gw/data" >gw.log 2>&1 &
gw_pid=$!
export AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_REGION=us-east-1
export AWS_CONFIG_FILE=$tmp/aws-config AWS_SHARED_CREDENTIALS_FILE=$tmp/aws-credentials AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN
"$s3plain" wait "$AWS_ENDPOINT_URL_S3"
"$s3plain" mb bench

"$c4gh" keygen --nocrypt --sk alice.sec --pk alice.pub >/dev/null 2>&1
GiB=$((1 << 30))
echo "making a 1 GiB random file ..." >&2
head -c "$GiB" /dev/urandom >plain
sync

enc() { "$c4gh" encrypt --recipient_pk alice.pub --force -i plain -o s3://bench/enc; }
enc_prev() { "$tmp/crypt4gh-prev" encrypt --recipient_pk alice.pub --force -i plain -o s3://bench/enc-prev; }
tm() { "$s3plain" put -part 16 -conc 5 plain bench plain-tm; }
tm_defaults() { "$s3plain" put plain bench plain-tm; }
seal() { "$tmp/ceiling" -size "$GiB" -runs 1 >/dev/null; }

# Correctness first: a fast wrong answer is no answer.
enc
"$c4gh" decrypt --sk alice.sec -i s3://bench/enc | cmp -s - plain || { echo "bench-upload: the object does not decrypt to the file" >&2; exit 1; }
if [[ -n $PREV ]]; then enc_prev; fi

# run NAME: one run of the function NAME; keeps the least wall time
# (wall_NAME) and the least CPU time, user + sys (cpu_NAME), in seconds.
declare -A wall cpu
run() {
	local t0 t1 c
	sync # no writeback of earlier files during the run
	t0=$EPOCHREALTIME
	c=$({ TIMEFORMAT='%3U %3S'; time "$1" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.3f", $1 + $2 }')
	t1=$EPOCHREALTIME
	local w
	w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
	if [[ -z ${wall[$1]:-} ]] || awk -v a="$w" -v b="${wall[$1]}" 'BEGIN { exit !(a < b) }'; then wall[$1]=$w; fi
	if [[ -z ${cpu[$1]:-} ]] || awk -v a="$c" -v b="${cpu[$1]}" 'BEGIN { exit !(a < b) }'; then cpu[$1]=$c; fi
}

names=(tm enc tm_defaults seal)
if [[ -n $PREV ]]; then names+=(enc_prev); fi
echo "measuring, best of $RUNS, taking turns: ${names[*]} ..." >&2
for ((i = 0; i < RUNS; i++)); do
	for n in "${names[@]}"; do run "$n"; done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
sum() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a + b }'; }
bound=$(sum "${cpu[tm]}" "${cpu[seal]}")

model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "crypt4gh bench-upload, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs (${model:-unknown}), $(go env GOVERSION), versitygw $version on 127.0.0.1"
echo "versitygw's folder on $(df -PT "$tmp" | awk 'NR == 2 { print $2 }'); 1 GiB random file, each figure the least of $RUNS runs"
echo
printf '%-52s %12s %10s   %s\n' "client CPU per GiB (user + sys)" "s" "ratio" ""
printf '%-52s %12s %10s   %s\n' "seal loop alone (scripts/ceiling)" "${cpu[seal]}" "" ""
printf '%-52s %12s %10s   %s\n' "transfer manager upload, 16 MiB x 5" "${cpu[tm]}" "" ""
printf '%-52s %12s %10s   %s\n' "transfer manager upload, defaults" "${cpu[tm_defaults]}" "" ""
printf '%-52s %12s %10s   %s\n' "bound: transfer manager (16 MiB x 5) + seal loop" "$bound" "1" ""
printf '%-52s %12s %10s   %s\n' "encrypt -o s3://" "${cpu[enc]}" "$(ratio "${cpu[enc]}" "$bound")" "of the bound"
if [[ -n $PREV ]]; then
	printf '%-52s %12s %10s   %s\n' "encrypt -o s3://, $PREV ($(git -C "$root" rev-parse --short "$PREV"))" "${cpu[enc_prev]}" "$(ratio "${cpu[enc_prev]}" "$bound")" "of the bound"
	printf '%-52s %12s %10s   %s\n' "  this / previous" "" "$(ratio "${cpu[enc]}" "${cpu[enc_prev]}")" ""
fi
echo
printf '%-52s %12s %10s   %s\n' "wall time" "s" "ratio" ""
printf '%-52s %12s %10s   %s\n' "transfer manager upload, 16 MiB x 5" "${wall[tm]}" "1" ""
printf '%-52s %12s %10s   %s\n' "transfer manager upload, defaults" "${wall[tm_defaults]}" "$(ratio "${wall[tm_defaults]}" "${wall[tm]}")" "x 16 MiB x 5"
printf '%-52s %12s %10s   %s\n' "encrypt -o s3://" "${wall[enc]}" "$(ratio "${wall[enc]}" "${wall[tm]}")" "x 16 MiB x 5"
if [[ -n $PREV ]]; then
	printf '%-52s %12s %10s   %s\n' "encrypt -o s3://, $PREV" "${wall[enc_prev]}" "$(ratio "${wall[enc_prev]}" "${wall[tm]}")" "x 16 MiB x 5"
	printf '%-52s %12s %10s   %s\n' "  this / previous" "" "$(ratio "${wall[enc]}" "${wall[enc_prev]}")" ""
fi
