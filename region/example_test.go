package region_test

import (
	"fmt"
	"strings"

	"github.com/c4gh-go/crypt4gh/region"
)

func ExampleParse() {
	for _, s := range []string{"chr20:1,000-2,000", "{HLA:x}:5", "chrM", "*"} {
		r, err := region.Parse(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s [%d, %d) %s\n", r.Name, r.Start, min(r.End, 1e9), r)
	}
	_, err := region.Parse("chr20:2000-1000")
	fmt.Println(err)
	// Output:
	// chr20 [999, 2000) chr20:1000-2000
	// HLA:x [4, 1000000000) {HLA:x}:5
	// chrM [0, 1000000000) chrM
	// * [0, 1000000000) *
	// invalid region "chr20:2000-1000": end 1000 before start 2000
}

func ExampleReadBED() {
	bed := "track name=genes\nchr1\t0\t100\tA\nchr2\t500\t600\tB\n"
	regions, err := region.ReadBED(strings.NewReader(bed), "genes.bed")
	fmt.Println(regions[0], regions[1], err)
	// Output: chr1:1-100 chr2:501-600 <nil>
}
