package batch

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// Shard is a worker's share of the inputs of a batch: the inputs whose
// [Hash] is I modulo N. N workers given the same inputs and I = 0…N-1
// take every input exactly once, with no coordination. The zero Shard
// takes every input.
type Shard struct {
	I, N uint64
}

// ParseShard parses "I/N", 0 ≤ I < N.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.ParseUint(is, 10, 64)
	n, nerr := strconv.ParseUint(ns, 10, 64)
	switch {
	case !ok || ierr != nil || nerr != nil:
		return Shard{}, errkind.Wrap(errkind.Usage, fmt.Errorf("invalid --shard %q: want I/N, as 0/4", s))
	case n == 0:
		return Shard{}, errkind.Wrap(errkind.Usage, fmt.Errorf("invalid --shard %q: N must be at least 1", s))
	case i >= n:
		return Shard{}, errkind.Wrap(errkind.Usage, fmt.Errorf("invalid --shard %q: I must be below N (0 to %d)", s, n-1))
	}
	return Shard{I: i, N: n}, nil
}

// Hash is the hash that shards inputs: FNV-1a, 64 bits, of the bytes of
// the name as given (a FILE argument or a line of a list, unchanged) or
// as listed (s3://BUCKET/KEY for the objects of a prefix). In Python:
//
//	h = 0xcbf29ce484222325
//	for b in name.encode(): h = ((h ^ b) * 0x100000001b3) % 2**64
func Hash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// Has reports whether the input name is in the shard.
func (s Shard) Has(name string) bool {
	return s.N <= 1 || Hash(name)%s.N == s.I
}

// String is "I/N", or "" for the zero Shard.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}
