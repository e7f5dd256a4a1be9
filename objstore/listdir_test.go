package objstore_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/objstore"
)

// TestListDir lists one level of keys at a time, as a folder.
func TestListDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t, time.Minute)
	for k, n := range map[string]int{"a/1": 1, "a/2": 22, "a/b/3": 333, "a/b/c/4": 4, "a/d/5": 5, "b/6": 6} {
		e.put(t, k, make([]byte, n))
	}
	e.put(t, "a/", nil)   // a folder object, as some tools make
	e.put(t, "a/e/", nil) // a folder object with nothing in it
	list := func(prefix string) string {
		var got []string
		for info, err := range e.c.ListDir(context.Background(), bucket, prefix) {
			if err != nil {
				t.Fatal(err)
			}
			if info.Key[len(info.Key)-1] == '/' {
				if info.Size != 0 || info.ETag != "" {
					t.Errorf("folder %+v", info)
				}
				got = append(got, info.Key)
				continue
			}
			if info.ETag == "" || info.LastModified.IsZero() {
				t.Errorf("%s: %+v", info.Key, info)
			}
			got = append(got, fmt.Sprintf("%s=%d", info.Key, info.Size))
		}
		sort.Strings(got)
		return fmt.Sprint(got)
	}
	for prefix, want := range map[string]string{
		"":     "[a/ b/]",
		"a/":   "[a/1=1 a/2=22 a/b/ a/d/ a/e/]",
		"a/b/": "[a/b/3=333 a/b/c/]",
		"a/e/": "[]",
		"c/":   "[]",
	} {
		if got := list(prefix); got != want {
			t.Errorf("ListDir %q: %s, want %s", prefix, got, want)
		}
	}
	for _, err := range e.c.ListDir(context.Background(), "no-such-bucket", "") {
		isKind(t, err, objstore.ErrNoBucket, errkind.Usage)
	}
}
