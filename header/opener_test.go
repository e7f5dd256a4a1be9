package header

import (
	"errors"
	"testing"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// countingOpener opens packets with a secret key, one call each, and
// fails every call once broken is set.
type countingOpener struct {
	sk     *keys.SecretKey
	calls  int
	broken error
}

func (o *countingOpener) OpenPacket(w keys.PublicKey, n *[keys.NonceSize]byte, ct []byte) ([]byte, error) {
	o.calls++
	if o.broken != nil {
		return nil, o.broken
	}
	return o.sk.OpenPacket(w, n, ct)
}

// TestDecryptWithOpener: an opener that is not a secret key is asked for
// every packet, its ErrPacketAuth skips the packet, and any other error
// stops Decrypt with that error.
func TestDecryptWithOpener(t *testing.T) {
	me, other := mustKey(t), mustKey(t)
	var dk [32]byte
	dk[0] = 7
	h, err := New(nil, []keys.PublicKey{other.Public(), me.Public()}, &dk, []uint64{1, 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &countingOpener{sk: me}
	c, err := h.Decrypt(o, nil)
	if err != nil || len(c.DataKeys) != 1 || c.DataKeys[0] != dk || !c.HasEditList || o.calls != len(h.Packets) {
		t.Fatalf("Decrypt: %+v, %v, %d calls", c, err, o.calls)
	}
	if _, err := h.Packets[0].Open(o); !errors.Is(err, ErrPacketAuth) || !errors.Is(err, keys.ErrPacketAuth) {
		t.Errorf("Open of another reader's packet: %v", err)
	}
	gone := errkind.New(errkind.Key, "the agent went away")
	o.broken = gone
	if _, err := h.Decrypt(o, nil); !errors.Is(err, gone) || errors.Is(err, ErrNoDecryptablePacket) {
		t.Errorf("Decrypt with a failing opener: %v", err)
	}
	if _, err := h.Decrypt((*keys.SecretKey)(nil), nil); errkind.Of(err) != errkind.Usage {
		t.Errorf("Decrypt with a nil key: %v", err)
	}
}

func mustKey(t *testing.T) *keys.SecretKey {
	t.Helper()
	sk, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &sk
}
