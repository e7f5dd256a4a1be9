package keys

import (
	"encoding/binary"
	"os"
	"sync"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/bcryptpbkdf"
)

// The tests open the same vector files again and again (whole, cut at
// every length, relabelled, re-marshalled), and each opening of a bcrypt
// key costs about half a second. TestMain makes bcryptKey and scryptKey
// remember what each set of inputs derived, so that every distinct
// derivation still runs the real KDF once per test process (at the cost
// stored in the file) and a repeat is a lookup. A wrong passphrase, another
// salt or other rounds are other inputs, and run the KDF.
func TestMain(m *testing.M) {
	bcryptKey = memoKDF(bcryptKey)
	scryptKey = memoScrypt(scryptKey)
	os.Exit(m.Run())
}

// memoLimit bounds the entries kept, for a fuzzing run that derives from
// ever new inputs.
const memoLimit = 4096

type kdfMemo struct {
	mu   sync.Mutex
	keys map[string][]byte
}

// derive returns what fn derives for the inputs, once per distinct inputs.
// The result is a copy: callers clear what they are given.
func (c *kdfMemo) derive(fn func() ([]byte, error), password, salt []byte, params ...int) ([]byte, error) {
	id := make([]byte, 0, len(password)+len(salt)+8*(len(params)+2))
	for _, b := range [][]byte{password, salt} {
		id = binary.BigEndian.AppendUint64(id, uint64(len(b)))
		id = append(id, b...)
	}
	for _, p := range params {
		id = binary.BigEndian.AppendUint64(id, uint64(p))
	}
	c.mu.Lock()
	key, ok := c.keys[string(id)]
	c.mu.Unlock()
	if ok {
		return append([]byte(nil), key...), nil
	}
	key, err := fn()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.keys) < memoLimit {
		c.keys[string(id)] = append([]byte(nil), key...)
	}
	c.mu.Unlock()
	return key, nil
}

func memoKDF(fn func(password, salt []byte, rounds, keyLen int) ([]byte, error)) func(password, salt []byte, rounds, keyLen int) ([]byte, error) {
	c := &kdfMemo{keys: map[string][]byte{}}
	return func(password, salt []byte, rounds, keyLen int) ([]byte, error) {
		return c.derive(func() ([]byte, error) { return fn(password, salt, rounds, keyLen) }, password, salt, rounds, keyLen)
	}
}

func memoScrypt(fn func(password, salt []byte, n, r, p, keyLen int) ([]byte, error)) func(password, salt []byte, n, r, p, keyLen int) ([]byte, error) {
	c := &kdfMemo{keys: map[string][]byte{}}
	return func(password, salt []byte, n, r, p, keyLen int) ([]byte, error) {
		return c.derive(func() ([]byte, error) { return fn(password, salt, n, r, p, keyLen) }, password, salt, n, r, p, keyLen)
	}
}

// TestKDFMemo checks the memo itself: a repeat gives the same bytes as the
// first derivation without running the KDF, other inputs run it, and what
// a caller clears is not what the next caller gets.
func TestKDFMemo(t *testing.T) {
	calls := 0
	derive := memoKDF(func(password, salt []byte, rounds, keyLen int) ([]byte, error) {
		calls++
		return bcryptpbkdf.Key(password, salt, rounds, keyLen)
	})
	first, err := derive([]byte("pass"), []byte("salt"), 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), first...)
	clear(first)
	again, err := derive([]byte("pass"), []byte("salt"), 2, 32)
	if err != nil || string(again) != string(want) || calls != 1 {
		t.Errorf("repeat: %x, %v after %d calls; want %x after 1", again, err, calls, want)
	}
	for _, in := range []struct {
		pass, salt string
		rounds     int
	}{{"pasS", "salt", 2}, {"pass", "salT", 2}, {"pass", "salt", 3}, {"pas", "ssalt", 2}} {
		other, err := derive([]byte(in.pass), []byte(in.salt), in.rounds, 32)
		if err != nil || string(other) == string(want) {
			t.Errorf("%+v: %x, %v: the memo answered for other inputs", in, other, err)
		}
	}
	if calls != 5 {
		t.Errorf("%d KDF runs for 5 distinct inputs", calls)
	}
}
