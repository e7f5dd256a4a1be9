//go:build race

package c4gh

// raceEnabled is set under -race. iotest.TestReader reads a ReaderAt 1 to
// 3 bytes at a time, each read opening its whole segment: a few seconds
// without the race detector, minutes with it, which finds nothing there
// (the reads are sequential). Under -race those checks are left out;
// .ci/run runs this package without -race too, where they run.
const raceEnabled = true
