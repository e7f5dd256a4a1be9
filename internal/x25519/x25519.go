// Package x25519 is the X25519 function of RFC 7748 with one scalar
// multiplication a call. crypto/ecdh (and golang.org/x/crypto/curve25519,
// which calls it) computes the public key of a private key when it is
// made, a second multiplication that a Diffie-Hellman exchange with a
// known public key does not need; and it keeps the private key on the
// heap, while the callers here keep theirs in memory of their own.
package x25519

import (
	"crypto/subtle"
	"errors"

	"filippo.io/edwards25519/field"
)

// ErrLowOrder is returned when the result is all zeros: the point is of
// low order.
var ErrLowOrder = errors.New("x25519: low-order point")

// X25519 sets dst to the X25519 of the scalar and the point u (RFC 7748,
// section 5: the scalar clamped, the high bit of u ignored). It fails on
// an all-zero result, as crypto/ecdh does. The work does not depend on the
// scalar's value.
func X25519(dst, scalar, point *[32]byte) error {
	var k [32]byte
	copy(k[:], scalar[:])
	k[0] &= 248
	k[31] &= 127
	k[31] |= 64

	var x1, x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb field.Element
	if _, err := x1.SetBytes(point[:]); err != nil {
		panic("x25519: internal error: " + err.Error())
	}
	x2.One()
	z2.Zero()
	x3.Set(&x1)
	z3.One()
	swap := 0
	for t := 254; t >= 0; t-- {
		bit := int(k[t/8]>>(t%8)) & 1
		swap ^= bit
		x2.Swap(&x3, swap)
		z2.Swap(&z3, swap)
		swap = bit

		a.Add(&x2, &z2)
		aa.Square(&a)
		b.Subtract(&x2, &z2)
		bb.Square(&b)
		e.Subtract(&aa, &bb)
		c.Add(&x3, &z3)
		d.Subtract(&x3, &z3)
		da.Multiply(&d, &a)
		cb.Multiply(&c, &b)
		x3.Add(&da, &cb)
		x3.Square(&x3)
		z3.Subtract(&da, &cb)
		z3.Square(&z3)
		z3.Multiply(&z3, &x1)
		x2.Multiply(&aa, &bb)
		z2.Mult32(&e, 121665)
		z2.Add(&z2, &aa)
		z2.Multiply(&z2, &e)
	}
	x2.Swap(&x3, swap)
	z2.Swap(&z3, swap)
	z2.Invert(&z2)
	x2.Multiply(&x2, &z2)
	copy(dst[:], x2.Bytes())

	clear(k[:])
	for _, v := range []*field.Element{&x1, &x2, &z2, &x3, &z3, &a, &aa, &b, &bb, &e, &c, &d, &da, &cb} {
		v.Zero()
	}
	var zero [32]byte
	if subtle.ConstantTimeCompare(dst[:], zero[:]) == 1 {
		return ErrLowOrder
	}
	return nil
}
