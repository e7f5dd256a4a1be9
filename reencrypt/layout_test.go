package reencrypt_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// layoutBytes concatenates the parts of a layout of file, as a client of
// an htsget ticket does.
func layoutBytes(t *testing.T, file []byte, l *reencrypt.Layout) []byte {
	t.Helper()
	var out []byte
	for _, p := range l.Parts() {
		if p.Data != nil {
			out = append(out, p.Data...)
			continue
		}
		if p.Start < 0 || p.End > int64(len(file)) || p.Start > p.End {
			t.Fatalf("part [%d, %d) of a %d-byte file", p.Start, p.End, len(file))
		}
		out = append(out, file[p.Start:p.End]...)
	}
	return out
}

// TestPlanLayout: the concatenation of a layout's parts is a file that the
// recipient (not the source's reader) decrypts, with this package and with
// the other implementation, to the concatenation of the pieces, whatever
// the pieces and the source's edit list; and it holds as many body bytes
// as Assemble writes.
func TestPlanLayout(t *testing.T) {
	a, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := &a, &b
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 60 {
		plain := plaintext([]int{0, 100, seg, 3*seg + 17, 5 * seg}[i%5], uint64(i))
		var el []uint64
		if i%3 == 1 {
			el = []uint64{10, uint64(len(plain) / 2)}
		}
		file := encrypt(t, plain, el, alice, alice.Public())
		stands := modelOf(t, file, alice).output()
		pieces := randomPieces(rng, int64(len(stands)), 6)
		opts := reencrypt.AssembleOptions{Reader: alice, Recipients: []keys.PublicKey{bob.Public()}}
		l, err := reencrypt.PlanLayout(bytes.NewReader(file), pieces, opts)
		if err != nil {
			t.Fatalf("pieces %v: %v", pieces, err)
		}
		out := layoutBytes(t, file, l)
		checkAssembled(t, out, concat(stands, pieces), bob)
		assembled, err := assembleBytes(file, pieces, opts)
		if err != nil {
			t.Fatal(err)
		}
		var got, want int64
		for _, p := range l.Body {
			got += p.Len()
		}
		want = int64(len(assembled)) - int64(len(l.Sealed)) - 16
		if got != want {
			t.Fatalf("pieces %v: layout body is %d bytes, Assemble's %d", pieces, got, want)
		}
	}
}
