package c4gh_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// lines returns n lines of 8 bytes, "0000000\n", "0000001\n", …, so that
// byte 8*i starts line i.
func lines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%07d\n", i)
	}
	return b.Bytes()
}

// Encrypt a stream for two recipients; each of them decrypts it with their
// own secret key, and anybody else finds no packet for their key.
func Example() {
	alice, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	bob, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}

	var file bytes.Buffer
	n, err := c4gh.Encrypt(&file, strings.NewReader("Hello, Crypt4GH!\n"), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{alice.Public(), bob.Public()},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("encrypted", n, "bytes")

	for _, reader := range []struct {
		name string
		key  *keys.SecretKey
	}{{"alice", &alice}, {"bob", &bob}} {
		f, err := c4gh.Open(bytes.NewReader(file.Bytes()), reader.key, nil)
		if err != nil {
			log.Fatal(err)
		}
		var out strings.Builder
		if _, err := f.Decrypt(&out, nil, 0); err != nil {
			log.Fatal(err)
		}
		f.Close()
		fmt.Printf("%s reads: %s", reader.name, out.String())
	}

	eve, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c4gh.Open(bytes.NewReader(file.Bytes()), &eve, nil)
	fmt.Println("eve:", errors.Is(err, header.ErrNoDecryptablePacket))
	// Output:
	// encrypted 17 bytes
	// alice reads: Hello, Crypt4GH!
	// bob reads: Hello, Crypt4GH!
	// eve: true
}

// Decrypt a range of a file. Because the source is an *os.File, only the
// segment that holds the range is read and decrypted.
func ExampleFile_Decrypt_range() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	tmp, err := os.CreateTemp("", "example-*.c4gh")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	// 30000 lines of 8 bytes: 240000 bytes, four segments.
	if _, err := c4gh.Encrypt(tmp, bytes.NewReader(lines(30000)), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		log.Fatal(err)
	}

	f, err := c4gh.Open(tmp, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	// Bytes [100000, 100024): lines 12500 to 12502.
	n, err := f.Decrypt(os.Stdout, &edit.Range{Start: 100000, End: 100024}, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "bytes")
	// Output:
	// 0012500
	// 0012501
	// 0012502
	// 24 bytes
}

// Read any part of the plaintext, as often as needed, with a
// [body.ReaderAt] over the body of a file opened with [c4gh.Open]. The body
// starts after the header, at f.Header.Size(). (A ReaderAt reads the body
// plaintext: it does not apply an edit list.)
func ExampleOpen_readerAt() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := c4gh.Encrypt(&file, bytes.NewReader(lines(30000)), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
	}); err != nil {
		log.Fatal(err)
	}
	src := bytes.NewReader(file.Bytes())

	f, err := c4gh.Open(src, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	start := f.Header.Size()
	size := src.Size() - start
	r, err := body.NewReaderAt(io.NewSectionReader(src, start, size), size, f.Contents.DataKeys)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("plaintext:", r.Size(), "bytes")

	buf := make([]byte, 8)
	for _, line := range []int64{29999, 8192, 0} {
		if _, err := r.ReadAt(buf, 8*line); err != nil {
			log.Fatal(err)
		}
		fmt.Print(string(buf))
	}
	// Output:
	// plaintext: 240000 bytes
	// 0029999
	// 0008192
	// 0000000
}

// Encrypt only part of the input: bytes [8, 24), the second and third lines.
func ExampleEncrypt_range() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	n, err := c4gh.Encrypt(&file, bytes.NewReader(lines(10)), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
		Range:      &edit.Range{Start: 8, End: 24},
	})
	if err != nil {
		log.Fatal(err)
	}
	f, err := c4gh.Open(&file, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Decrypt(os.Stdout, nil, 0); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "bytes encrypted")
	// Output:
	// 0000001
	// 0000002
	// 16 bytes encrypted
}
