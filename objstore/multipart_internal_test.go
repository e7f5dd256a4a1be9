package objstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// memUpload is a partWriter that keeps the parts in memory, so that the
// Writer's own rules (parts in flight, the order of completion, the
// abort on failure) are tested without a store.
type memUpload struct {
	mu        sync.Mutex
	parts     map[int32][]byte
	inFlight  int
	most      int // parts in flight at once, at most
	begins    int
	completed []int32 // the numbers given to complete
	object    []byte  // committed
	puts      int
	aborts    []bool // the stopped argument of each abort of a begun upload
	delay     func(n int32) time.Duration
	fail      int32 // a part that fails, 0 for none
}

var errPart = errors.New("part refused")

func (m *memUpload) begin(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.begins++
	m.parts = map[int32][]byte{}
	return nil
}

func (m *memUpload) writePart(ctx context.Context, n int32, body io.ReadSeeker, size int64) (donePart, error) {
	m.mu.Lock()
	m.inFlight++
	m.most = max(m.most, m.inFlight)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inFlight--
		m.mu.Unlock()
	}()
	if n == m.fail {
		return donePart{}, errPart
	}
	if m.delay != nil {
		select {
		case <-time.After(m.delay(n)):
		case <-ctx.Done():
			return donePart{}, ctx.Err()
		}
	}
	b, err := io.ReadAll(body)
	if err != nil || int64(len(b)) != size {
		return donePart{}, errors.New("short body")
	}
	m.mu.Lock()
	m.parts[n] = b
	m.mu.Unlock()
	return donePart{n: n, etag: "e"}, nil
}

func (m *memUpload) complete(ctx context.Context, parts []donePart) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range parts {
		m.completed = append(m.completed, p.n)
		m.object = append(m.object, m.parts[p.n]...)
	}
	return nil
}

func (m *memUpload) put(ctx context.Context, body io.ReadSeeker, size int64) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	m.object = b
	return nil
}

func (m *memUpload) abort(ctx context.Context, begun, stopped bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if begun {
		m.aborts = append(m.aborts, stopped)
	}
	return nil
}

func (m *memUpload) wrap(err error) error { return &Error{Op: "write", Location: "mem", Err: err} }

// memWriter returns a Writer of parts of MinPartSize through m.
func memWriter(t *testing.T, m *memUpload, concurrency int) *Writer {
	t.Helper()
	opt, err := writerOptions(&WriterOptions{PartSize: MinPartSize, Concurrency: concurrency})
	if err != nil {
		t.Fatal(err)
	}
	return newWriter(context.Background(), m, opt, false)
}

func memData(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestWriterOrder sends parts that finish in the reverse of their order:
// the object is still committed from them in order, with no more in
// flight than Concurrency.
func TestWriterOrder(t *testing.T) {
	m := &memUpload{delay: func(n int32) time.Duration { return time.Duration(5-n) * 20 * time.Millisecond }}
	w := memWriter(t, m, 3)
	data := memData(4*MinPartSize + 1000)
	for b := data; len(b) > 0; b = b[min(len(b), 300000):] {
		if _, err := w.Write(b[:min(len(b), 300000)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.object, data) {
		t.Fatalf("object of %d bytes differs from the %d written", len(m.object), len(data))
	}
	if want := []int32{1, 2, 3, 4, 5}; !slices.Equal(m.completed, want) {
		t.Errorf("completed %v, want %v", m.completed, want)
	}
	if m.begins != 1 || m.puts != 0 || len(m.aborts) != 0 {
		t.Errorf("%d begins, %d puts, aborts %v", m.begins, m.puts, m.aborts)
	}
	if m.most > 3 {
		t.Errorf("%d parts in flight, Concurrency 3", m.most)
	}
	if err := w.Abort(); err != nil || len(m.aborts) != 0 {
		t.Errorf("Abort after Close: %v, aborts %v", err, m.aborts)
	}
}

// TestWriterOnePut sends an object of at most one part with one request,
// and an empty one too.
func TestWriterOnePut(t *testing.T) {
	for _, n := range []int{0, 1, MinPartSize} {
		m := &memUpload{}
		w := memWriter(t, m, 2)
		data := memData(n)
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if m.puts != 1 || m.begins != 0 || !bytes.Equal(m.object, data) {
			t.Errorf("%d bytes: %d puts, %d begins, %d bytes stored", n, m.puts, m.begins, len(m.object))
		}
	}
}

// TestWriterPartFails aborts the upload on a failed part: the parts under
// way are stopped, nothing is committed, and every later call fails.
func TestWriterPartFails(t *testing.T) {
	m := &memUpload{fail: 2, delay: func(n int32) time.Duration { return time.Minute }}
	w := memWriter(t, m, 4)
	data := memData(6 * MinPartSize)
	var err error
	for b := data; len(b) > 0 && err == nil; b = b[min(len(b), MinPartSize/2):] {
		_, err = w.Write(b[:min(len(b), MinPartSize/2)])
	}
	if err == nil {
		err = w.Close()
	}
	if !errors.Is(err, errPart) {
		t.Fatalf("got %v, want the part's error", err)
	}
	if m.object != nil || len(m.completed) != 0 {
		t.Errorf("committed %d bytes", len(m.object))
	}
	if !slices.Equal(m.aborts, []bool{true}) {
		t.Errorf("aborts %v, want one, after a part stopped under way", m.aborts)
	}
	if _, err := w.Write([]byte("x")); !errors.Is(err, errPart) {
		t.Errorf("Write after the failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errPart) {
		t.Errorf("Close after the failure: %v", err)
	}
	if len(m.aborts) != 1 || m.begins != 1 {
		t.Errorf("%d aborts, %d begins after the failure", len(m.aborts), m.begins)
	}
}

// TestWriterAbort abandons an upload under way: aborted once, and
// nothing committed.
func TestWriterAbort(t *testing.T) {
	m := &memUpload{}
	w := memWriter(t, m, 2)
	if _, err := w.Write(memData(2*MinPartSize + 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrAborted) {
		t.Errorf("Close after Abort: %v", err)
	}
	if !slices.Equal(m.aborts, []bool{false}) || m.object != nil {
		t.Errorf("aborts %v, %d bytes committed", m.aborts, len(m.object))
	}
}
