// Package batch is what lets one batch run of the command be spread over
// many workers and survive their failures: the lists of inputs it reads
// (one name a line, or NUL-separated), the share of the inputs a worker
// takes (--shard I/N), the journal of the inputs done (--journal), the
// JSON records of each input (--json), and the runner that ties them to
// the work of each input.
//
// Nothing here knows crypt4gh: the command gives the runner a function
// that processes one input and says what it wrote.
package batch
