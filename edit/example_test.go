package edit_test

import (
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/c4gh-go/crypt4gh/edit"
)

// A file's edit list keeps "Hello" and "world" of its plaintext; the user
// asks for bytes 3-7 of what the file stands for, "lowo".
func ExampleMap() {
	plaintext := "Hello, cruel world!"
	list := edit.List{0, 5, 8, 5} // skip 0, keep 5, skip 8, keep 5
	kept := list.Intervals()
	fmt.Println(kept)

	r, err := edit.ParseRange("3-7")
	if err != nil {
		log.Fatal(err)
	}
	sel := edit.Map(kept, r.Start, r.End)
	fmt.Println(sel)

	out, err := io.ReadAll(edit.NewReader(strings.NewReader(plaintext), sel))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", out)
	// Output:
	// [[0,5) [13,18)]
	// [[3,5) [13,15)]
	// "lowo"
}

func ExamplePlanSegments() {
	// A 196731-byte plaintext in 65536-byte segments; keep [70000, 140000).
	p, err := edit.PlanSegments([]edit.Interval{{Start: 70000, End: 140000}}, 196731, 65536)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Segments, p.List)
	// Output:
	// [1 2] [4464 70000]
}
