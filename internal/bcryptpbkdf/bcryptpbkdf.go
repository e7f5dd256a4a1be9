// Package bcryptpbkdf is OpenSSH's bcrypt_pbkdf, which OpenSSH private keys
// and crypt4gh keys with the "bcrypt" KDF use.
package bcryptpbkdf

import (
	"crypto/sha512"
	"encoding/binary"
	"errors"

	//lint:ignore SA1019 bcrypt_pbkdf is defined on Blowfish; OpenSSH and crypt4gh keys use it
	"golang.org/x/crypto/blowfish"
)

// bcryptHashMagic is the 32-byte text that bcrypt_hash encrypts.
const bcryptHashMagic = "OxychromaticBlowfishSwatDynamite"

// bcryptHashSize is the output size of one bcrypt_hash call.
const bcryptHashSize = 32

// Key is OpenSSH's bcrypt_pbkdf (OpenBSD libutil): a PBKDF2-like
// construction over a bcrypt-based hash, as used by OpenSSH private keys and
// by crypt4gh keys with the "bcrypt" KDF. It returns keyLen bytes.
//
// Like OpenSSH it refuses an empty password or salt, rounds < 1, and keyLen
// outside 1…1024.
func Key(password, salt []byte, rounds, keyLen int) ([]byte, error) {
	switch {
	case rounds < 1:
		return nil, errors.New("bcrypt_pbkdf: rounds must be at least 1")
	case len(password) == 0:
		return nil, errors.New("bcrypt_pbkdf: empty password")
	case len(salt) == 0:
		return nil, errors.New("bcrypt_pbkdf: empty salt")
	case len(salt) > 1<<20:
		return nil, errors.New("bcrypt_pbkdf: salt too long")
	case keyLen < 1 || keyLen > bcryptHashSize*bcryptHashSize:
		return nil, errors.New("bcrypt_pbkdf: key length out of range")
	}

	// The output is spread over the blocks: byte i of block c (counting
	// from 1) lands at key[i*stride + c-1], so that every output byte
	// depends on the full work of its block.
	stride := (keyLen + bcryptHashSize - 1) / bcryptHashSize
	amt := (keyLen + stride - 1) / stride

	key := make([]byte, keyLen)
	sha2pass := sha512.Sum512(password)
	countSalt := make([]byte, len(salt)+4)
	copy(countSalt, salt)
	var sha2salt [sha512.Size]byte
	var tmp, out [bcryptHashSize]byte

	remaining := keyLen
	for count := 1; remaining > 0; count++ {
		binary.BigEndian.PutUint32(countSalt[len(salt):], uint32(count))
		sha2salt = sha512.Sum512(countSalt)
		bcryptHash(&tmp, &sha2pass, &sha2salt)
		out = tmp
		for i := 1; i < rounds; i++ {
			sha2salt = sha512.Sum512(tmp[:])
			bcryptHash(&tmp, &sha2pass, &sha2salt)
			for j := range out {
				out[j] ^= tmp[j]
			}
		}
		n := min(amt, remaining)
		i := 0
		for ; i < n; i++ {
			dest := i*stride + count - 1
			if dest >= keyLen {
				break
			}
			key[dest] = out[i]
		}
		remaining -= i
	}

	clear(sha2pass[:])
	clear(sha2salt[:])
	clear(tmp[:])
	clear(out[:])
	clear(countSalt)
	return key, nil
}

// bcryptHash is bcrypt_hash from OpenBSD's bcrypt_pbkdf.c: an expensive
// Blowfish key schedule keyed by both hashes, then 64 encryptions of
// bcryptHashMagic; the eight 32-bit words of the result are stored
// little-endian.
func bcryptHash(out *[bcryptHashSize]byte, sha2pass, sha2salt *[sha512.Size]byte) {
	c, err := blowfish.NewSaltedCipher(sha2pass[:], sha2salt[:])
	if err != nil {
		// Only an empty key is refused; sha2pass is 64 bytes.
		panic("keys: internal error: " + err.Error())
	}
	for range 64 {
		blowfish.ExpandKey(sha2salt[:], c)
		blowfish.ExpandKey(sha2pass[:], c)
	}
	// Blowfish reads its 64-bit block as two big-endian words, which is how
	// bcrypt_hash loads the magic text.
	copy(out[:], bcryptHashMagic)
	for range 64 {
		for b := 0; b < bcryptHashSize; b += blowfish.BlockSize {
			c.Encrypt(out[b:b+blowfish.BlockSize], out[b:b+blowfish.BlockSize])
		}
	}
	for w := 0; w < bcryptHashSize; w += 4 {
		binary.LittleEndian.PutUint32(out[w:], binary.BigEndian.Uint32(out[w:]))
	}
}
