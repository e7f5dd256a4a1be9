package c4gh_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/c4gh-go/crypt4gh/reencrypt"
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
		r, err := c4gh.NewReader(bytes.NewReader(file.Bytes()), reader.key, nil)
		if err != nil {
			log.Fatal(err)
		}
		var out strings.Builder
		if _, err := io.Copy(&out, r); err != nil {
			log.Fatal(err)
		}
		r.Close()
		fmt.Printf("%s reads: %s", reader.name, out.String())
	}

	eve, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c4gh.NewReader(bytes.NewReader(file.Bytes()), &eve, nil)
	fmt.Println("eve:", errors.Is(err, header.ErrNoDecryptablePacket))
	// Output:
	// encrypted 17 bytes
	// alice reads: Hello, Crypt4GH!
	// bob reads: Hello, Crypt4GH!
	// eve: true
}

// Encrypt as a stream: whatever is written to the Writer is encrypted, and
// Close seals the last segment.
func ExampleNewWriter() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	w, err := c4gh.NewWriter(&file, c4gh.EncryptOptions{Recipients: []keys.PublicKey{sk.Public()}})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	r, err := c4gh.NewReader(&file, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if _, err := io.Copy(os.Stdout, r); err != nil {
		log.Fatal(err)
	}
	// Output:
	// line 0
	// line 1
	// line 2
}

// Decrypt a stream and read only a range of it: bytes [100000, 100024),
// lines 12500 to 12502. The segments after the range are not read.
func ExampleReader_Select() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	// 30000 lines of 8 bytes: 240000 bytes, four segments.
	if _, err := c4gh.Encrypt(&file, bytes.NewReader(lines(30000)), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
	}); err != nil {
		log.Fatal(err)
	}

	r, err := c4gh.NewReader(&file, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if err := r.Select(edit.Range{Start: 100000, End: 100024}); err != nil {
		log.Fatal(err)
	}
	n, err := io.Copy(os.Stdout, r)
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

// Read any part of the plaintext, as often as needed, from a file held in
// any io.ReaderAt: only the segments that a read touches are read and
// decrypted.
func ExampleNewReaderAt() {
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

	r, err := c4gh.NewReaderAt(src, src.Size(), &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
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

// A file with an edit list stands for part of its body: here, made with
// reencrypt.Splice, lines 1 to 2 and 29998 to 29999 of 30000. The
// ReaderAt reads what the file stands for, the edit list applied.
func ExampleNewReaderAt_editList() {
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
	if _, err := c4gh.Encrypt(tmp, bytes.NewReader(lines(30000)), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		log.Fatal(err)
	}
	var spliced bytes.Buffer
	if err := reencrypt.Splice(&spliced, tmp, reencrypt.SpliceOptions{
		Reader: &sk,
		Ranges: []edit.Range{{Start: 8, End: 24}, {Start: 8 * 29998, End: edit.Unbounded}},
	}); err != nil {
		log.Fatal(err)
	}
	src := bytes.NewReader(spliced.Bytes())

	r, err := c4gh.NewReaderAt(src, src.Size(), &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	list, _ := r.EditList()
	fmt.Println("edit list:", list)
	if _, err := io.Copy(os.Stdout, io.NewSectionReader(r, 0, r.Size())); err != nil {
		log.Fatal(err)
	}
	// Output:
	// edit list: [8 16 108888 16]
	// 0000001
	// 0000002
	// 0029998
	// 0029999
}

// Encrypt only part of the input: bytes [8, 24), the second and third
// lines. An io.SectionReader selects them from any io.ReaderAt.
func ExampleEncrypt_range() {
	sk, err := keys.Generate(nil)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	n, err := c4gh.Encrypt(&file, io.NewSectionReader(bytes.NewReader(lines(10)), 8, 16), c4gh.EncryptOptions{
		Recipients: []keys.PublicKey{sk.Public()},
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := c4gh.NewReader(&file, &sk, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	if _, err := io.Copy(os.Stdout, r); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "bytes encrypted")
	// Output:
	// 0000001
	// 0000002
	// 16 bytes encrypted
}
