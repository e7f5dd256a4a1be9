package objstore

import "testing"

// The server-side copies of a range: they add up to it, each has
// MinPartSize and at most MaxPartSize, there are as many as run at once
// when the range allows it and no more than the parts left, none is
// larger than asked for but by the alignment (or than the parts left
// require), and every copy but the last ends on a multiple of copyAlign
// in the new object whenever the copies are large enough to move their
// ends. A range that the parts left cannot hold gets no copies.
func TestCopySizes(t *testing.T) {
	const MiB = 1 << 20
	for _, tc := range []struct {
		at, n, copyPart int64
		concurrency     int
		want            int   // copies
		maxCopies       int64 // 0: MaxParts
	}{
		{5 * MiB, 1<<30 - 5*MiB + 123, 1 << 30, 2, 2, 0},       // a rekey in place of 1 GiB
		{5 * MiB, 10<<30 + 7, 1 << 30, 2, 11, 0},               // 10 GiB
		{5 * MiB, 5 * MiB, 1 << 30, 2, 1, 0},                   // room for one copy only
		{5 * MiB, 10*MiB - 1, 1 << 30, 2, 1, 0},                // not quite two
		{5 * MiB, 10 * MiB, 1 << 30, 8, 2, 0},                  // two of exactly MinPartSize
		{123, 100*MiB + 5, 16 * MiB, 2, 7, 0},                  // unaligned start, small copies
		{0, 100 * MiB, MinPartSize, 1, 20, 0},                  // copies of exactly MinPartSize
		{5 * MiB, 3 * MaxPartSize, MaxPartSize, 2, 4, 0},       // the largest copies: room for the alignment
		{7*MiB + 1, 6*MiB + 17, MaxPartSize, 8, 1, 0},          // one copy, not aligned
		{5 * MiB, 1<<40 + 99, DefaultCopyPartSize, 8, 4097, 0}, // 1 TiB
		{5 * MiB, 5 << 40, DefaultCopyPartSize, 8, 9999, 9999}, // 5 TiB: larger copies
		{5 * MiB, 100 * MiB, DefaultCopyPartSize, 8, 3, 3},     // the parts left
		{5 * MiB, 15*MiB - 1, MinPartSize, 1, 2, 0},            // copies up to twice MinPartSize
	} {
		if tc.maxCopies == 0 {
			tc.maxCopies = MaxParts
		}
		sizes := copySizes(tc.at, tc.n, tc.copyPart, tc.concurrency, tc.maxCopies)
		if len(sizes) != tc.want {
			t.Errorf("%+v: %d copies, want %d", tc, len(sizes), tc.want)
		}
		end, sum := tc.at, int64(0)
		aligned := 0
		for i, s := range sizes {
			end += s
			sum += s
			if s < MinPartSize || s > MaxPartSize {
				t.Errorf("%+v: copy %d of %d bytes", tc, i, s)
			}
			if asked := max(tc.copyPart, 2*MinPartSize, tc.n/tc.maxCopies+1); s > asked+copyAlign {
				t.Errorf("%+v: copy %d of %d bytes, more than asked for", tc, i, s)
			}
			if i < len(sizes)-1 && end%copyAlign == 0 {
				aligned++
			}
		}
		if sum != tc.n {
			t.Errorf("%+v: copies of %d bytes in all", tc, sum)
		}
		// An end can move when the share of each copy leaves room for it.
		if share := tc.n / int64(len(sizes)); share >= MinPartSize+copyAlign && aligned != len(sizes)-1 {
			t.Errorf("%+v: %d of %d ends aligned: %v", tc, aligned, len(sizes)-1, sizes)
		}
	}
	for _, tc := range []struct{ n, maxCopies int64 }{
		{MaxParts * MaxPartSize, MaxParts}, // no room to move the ends
		{100 << 20, 0},
		{100 << 20, -3},
	} {
		if sizes := copySizes(0, tc.n, DefaultCopyPartSize, 2, tc.maxCopies); sizes != nil {
			t.Errorf("%d bytes in at most %d copies: %v", tc.n, tc.maxCopies, sizes)
		}
	}
}

// The x-amz-copy-source of a key is URL-encoded with its slashes kept,
// "+" included: a store decodes a bare "+" as a space.
func TestCopySource(t *testing.T) {
	for key, want := range map[string]string{
		"a.c4gh":          "b/a.c4gh",
		"dir/a+b.c4gh":    "b/dir/a%2Bb.c4gh",
		"c d/%20/é?#;&=~": "b/c%20d/%2520/%C3%A9%3F%23%3B&=~",
	} {
		if got := copySource("b", key); got != want {
			t.Errorf("copySource(%q) = %q, want %q", key, got, want)
		}
	}
}
