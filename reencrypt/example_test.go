package reencrypt_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
)

// exampleDecrypt returns the plaintext that file stands for, read with sk.
func exampleDecrypt(file []byte, sk *keys.SecretKey) (string, error) {
	f, err := c4gh.NewReader(bytes.NewReader(file), sk, nil)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var out strings.Builder
	_, err = io.Copy(&out, f)
	return out.String(), err
}

// Give a file encrypted for an archive key to a requester: a new header,
// the same body bytes.
func ExampleHeader() {
	archive, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	requester, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := c4gh.Encrypt(&file, strings.NewReader("genome data\n"), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{archive.Public()},
	}); err != nil {
		log.Fatal(err)
	}

	src := bytes.NewReader(file.Bytes())
	h, err := header.Parse(src) // src is left at the body
	if err != nil {
		log.Fatal(err)
	}
	nh, err := reencrypt.Header(h, &archive, []keys.PublicKey{requester.Public()}, true, nil)
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := nh.WriteTo(&out); err != nil {
		log.Fatal(err)
	}
	if _, err := io.Copy(&out, src); err != nil { // the body, unchanged
		log.Fatal(err)
	}

	text, err := exampleDecrypt(out.Bytes(), &requester)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print("requester reads: ", text)
	_, err = exampleDecrypt(out.Bytes(), &archive)
	fmt.Println("archive key opens the new file:", !errors.Is(err, header.ErrNoDecryptablePacket))
	fmt.Println("same body:", bytes.Equal(out.Bytes()[nh.Size():], file.Bytes()[h.Size():]))
	// Output:
	// requester reads: genome data
	// archive key opens the new file: false
	// same body: true
}

// Cut two ranges out of a file for a requester, without decrypting the
// body: only the segments that the ranges touch are copied, and an edit
// list selects the ranges in them.
func ExampleSplice() {
	archive, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	requester, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	// 30000 lines of 8 bytes, "0000000\n" to "0029999\n": four segments.
	var plain bytes.Buffer
	for i := range 30000 {
		fmt.Fprintf(&plain, "%07d\n", i)
	}
	var file bytes.Buffer
	if _, err := c4gh.Encrypt(&file, &plain, c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{archive.Public()},
	}); err != nil {
		log.Fatal(err)
	}

	var out bytes.Buffer
	err = reencrypt.Splice(&out, bytes.NewReader(file.Bytes()), reencrypt.SpliceOptions{
		Reader:     &archive,
		Recipients: []keys.PublicKey{requester.Public()},
		Ranges:     []edit.Range{{Start: 8, End: 16}, {Start: 8 * 20000, End: 8 * 20002}},
	})
	if err != nil {
		log.Fatal(err)
	}
	text, err := exampleDecrypt(out.Bytes(), &requester)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)
	nh, err := header.Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		log.Fatal(err)
	}
	segments := (int64(out.Len()) - nh.Size() + body.EncryptedSegmentSize - 1) / body.EncryptedSegmentSize
	fmt.Println("segments copied:", segments, "of 4")
	// Output:
	// 0000001
	// 0020000
	// 0020001
	// segments copied: 2 of 4
}
