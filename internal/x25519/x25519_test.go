package x25519

import (
	"bytes"
	"crypto/ecdh"
	"encoding/hex"
	"testing"
)

// The vectors of RFC 7748, section 5.2, and its iterated one (1,000
// times).
func TestRFC7748(t *testing.T) {
	for _, v := range []struct{ k, u, out string }{
		{"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
			"e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
			"c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
		{"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
			"e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
			"95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
	} {
		var k, u, got [32]byte
		hex.Decode(k[:], []byte(v.k))
		hex.Decode(u[:], []byte(v.u))
		if err := X25519(&got, &k, &u); err != nil || hex.EncodeToString(got[:]) != v.out {
			t.Errorf("X25519(%s, %s) = %x, %v; want %s", v.k, v.u, got, err, v.out)
		}
	}
	var k, u [32]byte
	k[0], u[0] = 9, 9
	for range 1000 {
		var r [32]byte
		if err := X25519(&r, &k, &u); err != nil {
			t.Fatal(err)
		}
		u, k = k, r
	}
	if got := hex.EncodeToString(k[:]); got != "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51" {
		t.Errorf("after 1,000 iterations: %s", got)
	}
}

// FuzzAgainstECDH: the same result as crypto/ecdh for any scalar and
// point, and the same refusal of low-order points.
func FuzzAgainstECDH(f *testing.F) {
	f.Add(bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{9}, 32))
	f.Add(bytes.Repeat([]byte{0xff}, 32), make([]byte, 32))
	f.Add(bytes.Repeat([]byte{7}, 32), append([]byte{1}, make([]byte, 31)...))
	f.Add(bytes.Repeat([]byte{3}, 32), bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, scalar, point []byte) {
		if len(scalar) != 32 || len(point) != 32 {
			return
		}
		priv, _ := ecdh.X25519().NewPrivateKey(scalar)
		pub, _ := ecdh.X25519().NewPublicKey(point)
		want, werr := priv.ECDH(pub)
		var got [32]byte
		err := X25519(&got, (*[32]byte)(scalar), (*[32]byte)(point))
		if (err != nil) != (werr != nil) || err == nil && !bytes.Equal(got[:], want) {
			t.Fatalf("X25519(%x, %x) = %x, %v; crypto/ecdh %x, %v", scalar, point, got, err, want, werr)
		}
	})
}

func BenchmarkX25519(b *testing.B) {
	var k, u, out [32]byte
	k[0], u[0] = 9, 9
	b.Run("ladder", func(b *testing.B) {
		for range b.N {
			X25519(&out, &k, &u)
		}
	})
	b.Run("ecdh", func(b *testing.B) {
		for range b.N {
			priv, _ := ecdh.X25519().NewPrivateKey(k[:])
			pub, _ := ecdh.X25519().NewPublicKey(u[:])
			priv.ECDH(pub)
		}
	})
}
