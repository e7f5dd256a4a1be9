package body

import (
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	// batchSegments is the number of segments read or written at once by
	// the parallel engine (512 KiB of plaintext). Larger batches save no
	// measurable time (a read or write of 512 KiB costs the same per byte
	// as one of 1 MiB) but each batch costs its size in memory (twice
	// that to decrypt with several data keys).
	batchSegments = 8
	// maxJobs bounds the number of workers whatever the caller asks for.
	maxJobs = 256
)

// slabs recycles batch memory across calls. A slab holds the input and the
// output of one batch of batchSegments segments, in either direction.
// Encryption and decryption with one data key use only its first part:
// each segment is sealed or opened where it was read (see
// engine.inPlace), and the rest of the slab is not touched: memory new to
// the process is then not even mapped (a slab that the heap reuses was
// zeroed whole).
var slabs = sync.Pool{New: func() any {
	return &slab{buf: make([]byte, batchSegments*(SegmentSize+EncryptedSegmentSize))}
}}

type slab struct{ buf []byte }

// batch is one slot of the engine's ring: a run of consecutive segments
// read at once, processed by the workers segment by segment, and written
// at once.
type batch struct {
	slab    *slab
	in, out []byte
	nonces  []byte // encryption: one random nonce per segment
	n       int    // bytes read into in
	count   int    // segments to process
	first   int64  // index in the body of the first segment
	outLen  int    // bytes of out to write when every segment succeeds
	plain   int64  // plaintext bytes that the batch stands for
	signal  bool   // out is not lent: say on e.wrote when it is written
	final   bool   // the input ended in this batch
	err     error  // the reader's error, reported after the batch is written
	pending atomic.Int32
	fail    atomic.Int32 // lowest segment (in the batch) that failed, count if none
	done    chan struct{}
}

type job struct {
	b *batch
	i int
}

// engine runs one call of Encrypt or Decrypt.
type engine struct {
	encrypt bool
	aead    cipher.AEAD // encryption
	keys    keyring     // decryption
	inSeg   int         // stride of a segment in batch.in
	outSeg  int         // stride of a segment in batch.out
	ring    int         // number of batches
	all     []*batch

	// inPlace: decryption with one data key opens each segment where it
	// was read, and writes the plaintexts from there (encryption does
	// the like always: see fill and place). The other half of the
	// batch's slab is not touched: a new process's memory is mapped a
	// page at a time as it is first written (10 to 14 µs a page on a
	// virtual machine), and for a file of a few MiB those pages were
	// most of the time.
	inPlace bool

	free  chan *batch
	queue chan *batch // batches in stream order, for the writer
	work  chan job

	// Encryption into a Lender: the segments are sealed into its memory.
	lender    Lender // nil once it lends nothing
	lentLast  bool   // the last Lend lent
	waitWrote bool   // the last batch was not lent: wait until it is written
	wrote     chan struct{}
	dstMu     sync.Mutex // Lend and Write come from two goroutines

	stopRead atomic.Bool   // a segment failed: read no further
	aborted  atomic.Bool   // nothing more will be written: skip the work
	serial   bool          // decryption in the calling goroutine (DecryptSerial)
	abort    chan struct{} // closed when aborted is set
	once     sync.Once
}

// Encrypt encrypts everything read from src under key and writes the
// encrypted body to dst, using jobs workers (runtime.GOMAXPROCS(0) when
// jobs <= 0, at most 256). Reading, encryption and writing overlap; memory use is
// bounded and does not depend on the length of src. Inputs shorter than
// one batch are encrypted in the calling goroutine. The output is a body
// like the one [Writer] produces (with different random nonces). Encrypt
// returns the number of plaintext bytes read and encrypted to dst.
//
// When dst is a [Lender], the segments are sealed in the memory it lends
// instead of being sealed in the engine's and then copied to dst.
func Encrypt(dst io.Writer, src io.Reader, key *[32]byte, jobs int) (int64, error) {
	if key == nil {
		return 0, errNoKey
	}
	e := &engine{encrypt: true, aead: newAEAD(key), inSeg: SegmentSize, outSeg: EncryptedSegmentSize}
	if l, ok := dst.(Lender); ok {
		e.lender = l
		e.wrote = make(chan struct{}, 1)
	}
	return e.run(dst, src, jobs)
}

// A Lender is an io.Writer that lends the memory its next bytes go to, so
// that a producer makes them in place instead of making them elsewhere to
// be copied in: [Encrypt] seals segments in it. The part buffers of an
// upload are the memory of objstore's Writer, say.
//
// Lend returns memory for the n bytes that follow those written and lent
// so far. The caller fills it and passes it to Write, regions in the order
// they were lent: Write then takes the bytes in place. When Lend cannot
// lend n bytes now (they would cross the end of its buffer) it returns
// nil: the caller then writes those n bytes from memory of its own, and
// lends nothing more before that Write. A Write of other bytes gives up
// what was lent and not written. A Lender that cannot lend at all returns
// nil from its first Lend. The caller must not touch lent memory after
// its Write, nor after an error.
type Lender interface {
	io.Writer
	Lend(n int) ([]byte, error)
}

// Decrypt decrypts the body read from src with keys, the data keys of the
// file, and writes the plaintext to dst, using jobs workers
// (runtime.GOMAXPROCS(0) when jobs <= 0). Its output is identical to that
// of [Reader]. When a segment fails, Decrypt stops and returns a
// [*SegmentError] with the index of the first failing segment; everything
// before that segment has been written to dst and nothing from it or after
// it has. Decrypt returns the number of plaintext bytes written.
func Decrypt(dst io.Writer, src io.Reader, keys [][32]byte, jobs int) (int64, error) {
	k, err := newKeyring(keys)
	if err != nil {
		return 0, err
	}
	e := &engine{keys: k, inSeg: EncryptedSegmentSize, outSeg: SegmentSize, inPlace: k.inPlace()}
	return e.run(dst, src, jobs)
}

// DecryptSerial is [Decrypt] in the calling goroutine: each batch of
// segments is read, opened and written before the next is read. It is for
// a caller that decrypts many streams at once, one goroutine each: the
// streams keep the cores busy, and the goroutines of Decrypt would only
// hand every batch from one to the next (for a stream of 1 MiB, that costs
// about as much CPU time as opening its segments).
func DecryptSerial(dst io.Writer, src io.Reader, keys [][32]byte) (int64, error) {
	k, err := newKeyring(keys)
	if err != nil {
		return 0, err
	}
	e := &engine{keys: k, inSeg: EncryptedSegmentSize, outSeg: SegmentSize, serial: true, inPlace: k.inPlace()}
	return e.run(dst, src, 1)
}

// Jobs returns the number of workers that [Encrypt] and [Decrypt] use for
// jobs: runtime.GOMAXPROCS(0) when jobs <= 0, and at most 256.
func Jobs(jobs int) int {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	return min(jobs, maxJobs)
}

func (e *engine) run(dst io.Writer, src io.Reader, jobs int) (int64, error) {
	jobs = Jobs(jobs)
	// Enough batches for the workers to stay busy while one batch is read
	// and one is written: the others hold at least two segments a worker.
	e.ring = max(4, 2+(2*jobs+batchSegments-1)/batchSegments)

	b := e.newBatch()
	e.fill(b, src, 0)
	e.place(b)
	if b.final || e.serial {
		// Shorter than one batch: no goroutines.
		return e.runSerial(dst, src, b)
	}

	e.free = make(chan *batch, e.ring)
	e.queue = make(chan *batch, e.ring)
	e.work = make(chan job, e.ring*batchSegments)
	e.abort = make(chan struct{})

	var workers sync.WaitGroup
	for range jobs {
		workers.Go(e.worker)
	}
	var (
		total  int64
		err    error
		writer = make(chan struct{})
	)
	go func() {
		defer close(writer)
		for b := range e.queue {
			<-b.done
			if err == nil {
				var n int64
				n, err = e.emit(dst, b)
				total += n
				if err != nil {
					e.stop()
				}
			}
			if b.signal {
				e.wrote <- struct{}{}
			}
			e.free <- b
		}
	}()

	for {
		e.dispatch(b)
		if b.final {
			break
		}
		first := b.first + int64(b.count)
		if b = e.next(); b == nil {
			break
		}
		e.fill(b, src, first)
		if !e.place(b) {
			break
		}
	}
	close(e.work)
	close(e.queue)
	<-writer
	workers.Wait()
	e.release()
	return total, err
}

// runSerial processes b, filled, and for a serial engine every batch
// after it in turn, in the calling goroutine.
func (e *engine) runSerial(dst io.Writer, src io.Reader, b *batch) (int64, error) {
	defer e.release()
	var total int64
	last := 0
	for {
		for i := range b.count {
			e.process(b, i, &last)
		}
		n, err := e.emit(dst, b)
		total += n
		if err != nil || b.final {
			return total, err
		}
		e.fill(b, src, b.first+int64(b.count))
		e.place(b)
	}
}

// newBatch adds a batch to the ring.
func (e *engine) newBatch() *batch {
	b := &batch{done: make(chan struct{}, 1), slab: slabs.Get().(*slab)}
	b.in = b.slab.buf[:batchSegments*e.inSeg]
	b.out = b.slab.buf[batchSegments*e.inSeg:]
	if e.encrypt {
		// Each segment's plaintext is read to where its ciphertext goes
		// (fill), and sealed there unless a Lender lends the output
		// (place).
		b.in = b.slab.buf[:batchSegments*EncryptedSegmentSize]
		b.out = b.in
		b.nonces = make([]byte, batchSegments*NonceSize)
	}
	e.all = append(e.all, b)
	return b
}

// release returns the batch memory to the pool once no goroutine uses it.
func (e *engine) release() {
	for _, b := range e.all {
		slabs.Put(b.slab)
		b.slab = nil
	}
}

// next returns a free batch to read into, or nil when the reading must
// stop.
func (e *engine) next() *batch {
	if e.stopRead.Load() {
		return nil
	}
	var b *batch
	select {
	case b = <-e.free:
	default:
		if len(e.all) < e.ring {
			b = e.newBatch()
		} else {
			select {
			case b = <-e.free:
			case <-e.abort:
				return nil
			}
		}
	}
	if e.stopRead.Load() {
		e.free <- b
		return nil
	}
	return b
}

func (e *engine) stop() {
	e.once.Do(func() {
		e.stopRead.Store(true)
		e.aborted.Store(true)
		close(e.abort)
	})
}

// fill reads the next batch from src and works out what it holds.
func (e *engine) fill(b *batch, src io.Reader, first int64) {
	b.first, b.err, b.final, b.outLen, b.plain = first, nil, false, 0, 0
	var n int
	var err error
	if e.encrypt {
		// Each segment after room for its nonce.
		for i := 0; i < batchSegments && err == nil; i++ {
			at := i*EncryptedSegmentSize + NonceSize
			var m int
			m, err = io.ReadFull(src, b.in[at:at+SegmentSize])
			n += m
		}
	} else {
		n, err = io.ReadFull(src, b.in)
	}
	b.n = n
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		b.final = true
	default:
		b.final, b.count = true, 0
		b.err = fmt.Errorf("failed to read: %w", err)
		b.fail.Store(0)
		return
	}
	count := (n + e.inSeg - 1) / e.inSeg
	lastLen := n - (count-1)*e.inSeg
	if e.encrypt {
		b.plain = int64(n)
		if count > 0 {
			b.outLen = (count-1)*EncryptedSegmentSize + lastLen + Overhead
			if _, err := rand.Read(b.nonces[:count*NonceSize]); err != nil {
				count, b.outLen, b.plain, b.final = 0, 0, 0, true
				b.err = fmt.Errorf("failed to generate nonces: %w", err)
			}
		}
	} else if count > 0 {
		if err := checkLength(first+int64(count-1), lastLen); err != nil {
			count--
			b.err = err
			lastLen = EncryptedSegmentSize
		}
		if count > 0 {
			b.outLen = (count-1)*SegmentSize + lastLen - Overhead
		}
		b.plain = int64(b.outLen)
	}
	b.count = count
	b.fail.Store(int32(count))
}

// place gives a filled batch of an encryption the memory its segments are
// sealed in: the Lender's, while it lends, else the batch's own, which
// emit then copies to dst. A batch that is not lent, after one that was,
// crosses the end of the Lender's buffer: the next batch waits until it is
// written, for what is lent follows what was written. place returns false
// when the writing stopped meanwhile.
func (e *engine) place(b *batch) bool {
	b.out, b.signal = b.slab.buf[batchSegments*e.inSeg:], false
	if e.encrypt {
		b.out = b.in // sealed in place
	}
	if e.lender == nil || b.outLen == 0 {
		return true
	}
	if e.waitWrote {
		select {
		case <-e.wrote:
		case <-e.abort:
			return false
		}
		e.waitWrote = false
	}
	e.dstMu.Lock()
	buf, err := e.lender.Lend(b.outLen)
	e.dstMu.Unlock()
	switch {
	case err == nil && buf != nil && len(buf) != b.outLen:
		err = fmt.Errorf("failed to write: lent %d bytes for %d", len(buf), b.outLen)
		fallthrough
	case err != nil:
		b.count, b.outLen, b.plain, b.final = 0, 0, 0, true
		b.err = err
		b.fail.Store(0)
	case buf != nil:
		b.out = buf[:len(buf):len(buf)]
		e.lentLast = true
	case e.lentLast:
		b.signal, e.waitWrote, e.lentLast = true, true, false
	default:
		e.lender = nil // it lends nothing
	}
	return true
}

// dispatch hands a filled batch to the writer and its segments to the
// workers. Neither send blocks: the channels hold the whole ring.
func (e *engine) dispatch(b *batch) {
	e.queue <- b
	if b.count == 0 {
		b.done <- struct{}{}
		return
	}
	b.pending.Store(int32(b.count))
	for i := range b.count {
		e.work <- job{b, i}
	}
}

func (e *engine) worker() {
	last := 0
	for j := range e.work {
		if !e.aborted.Load() {
			e.process(j.b, j.i, &last)
		}
		if j.b.pending.Add(-1) == 0 {
			j.b.done <- struct{}{}
			// The writer, just woken, waits for a P, and so does the
			// reader back from its read: with one worker per P they would
			// wait until the work runs out, and then the workers would
			// wait for them. Give the P up once a batch.
			runtime.Gosched()
		}
	}
}

// process encrypts or decrypts segment i of b. last is the worker's
// index of the data key that opened its previous segment.
func (e *engine) process(b *batch, i int, last *int) {
	out := b.out[i*e.outSeg : i*e.outSeg]
	if e.encrypt {
		at := i*EncryptedSegmentSize + NonceSize
		in := b.in[at : at+min(SegmentSize, b.n-i*SegmentSize)]
		seal(e.aead, out[:NonceSize], b.nonces[i*NonceSize:(i+1)*NonceSize], in)
		return
	}
	in := b.in[i*e.inSeg : min((i+1)*e.inSeg, b.n)]
	if e.inPlace {
		out = in[NonceSize:NonceSize]
	}
	if _, err := e.keys.open(out, in, b.first+int64(i), last); err != nil {
		for f := b.fail.Load(); int32(i) < f; f = b.fail.Load() {
			if b.fail.CompareAndSwap(f, int32(i)) {
				break
			}
		}
		e.stopRead.Store(true)
	}
}

// write writes the first n bytes of the result of b to dst: from b.out,
// or opened in place, from each segment of b.in.
func (e *engine) write(dst io.Writer, b *batch, n int) error {
	if !e.inPlace {
		return writeAll(dst, b.out[:n])
	}
	for at := NonceSize; n > 0; at += e.inSeg {
		m := min(n, SegmentSize)
		if err := writeAll(dst, b.in[at:at+m]); err != nil {
			return err
		}
		n -= m
	}
	return nil
}

// emit writes the result of a processed batch to dst and returns the
// plaintext bytes it stands for.
func (e *engine) emit(dst io.Writer, b *batch) (int64, error) {
	e.dstMu.Lock()
	defer e.dstMu.Unlock()
	if f := int(b.fail.Load()); f < b.count {
		// Only the last segment of the stream can be short, so every
		// segment before f is full.
		if f > 0 {
			if err := e.write(dst, b, f*SegmentSize); err != nil {
				return 0, err
			}
		}
		return int64(f) * SegmentSize, &SegmentError{Index: b.first + int64(f), Err: ErrAuth}
	}
	if b.outLen > 0 {
		if err := e.write(dst, b, b.outLen); err != nil {
			return 0, err
		}
	}
	return b.plain, b.err
}
