// Package mount shows a folder of Crypt4GH files as a read-only FUSE file
// system of their plaintext, so that programs which know nothing of
// Crypt4GH (samtools, bcftools, tabix, IGV) read encrypted data without a
// decrypted copy on disk.
//
//	srv, err := mount.Mount(mount.Dir("/data/enc"), "/mnt/plain", mount.Options{Key: &sk})
//	if err != nil {
//		return err
//	}
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	return srv.Wait(ctx) // until unmounted, or a signal: then it unmounts
//
// # What is shown
//
// The mount shows every folder and regular file of the [Source], read-only
// and under its own name, with one exception: a file named NAME.c4gh (see
// [Suffix]) whose header the secret key opens is shown as NAME, with the
// size of the plaintext that it stands for: its edit list applied,
// computed from the header and the length of the body, which is not read
// when a folder is listed. So an encrypted x.bam.c4gh beside a plain
// x.bam.bai shows as x.bam and x.bam.bai, as does an encrypted
// x.bam.bai.c4gh.
//
// A Crypt4GH file is left out, with a line in [Options.Log], when the key
// does not open it (it is for other readers, or [Options.Sender] did not
// write it), when it is not a Crypt4GH file at all (its body too: one that
// ends in 1 to 27 bytes, too few for a segment, or in an empty segment that
// does not authenticate), and when its NAME is also an entry of the same
// folder: then NAME is shown as it is, the plain file winning, so that
// every name shown stands for one file of the source
// and nothing in the source is hidden by a decrypted view. A folder is
// listed, and the headers in it opened, when it is first looked at; the
// listing is kept while the file system is mounted, or, with
// [Options.Refresh], until it is older than that (see there).
//
// A file whose edit list reaches past the end of its body (segments were
// cut off, say by an incomplete transfer) is shown with the size that the
// edit list stands for and logged when listed; reading what is missing
// fails.
//
// # Reading
//
// Each header is opened once and kept, with its data keys, in memory. A
// read decrypts only the segments that it touches, through
// [c4gh.NewReaderAt] over the file of the source, which is open only while
// some process has the shown file open. A few decrypted blocks of each open
// file are kept for reads that start or end inside one, within a budget of
// a few MiB shared by all files, so that memory stays bounded however many
// files are open. The kernel keeps what it read in its page cache (memory,
// never disk) across opens.
//
// A read that touches a segment that fails authentication, or bytes that
// are missing from the body, fails with EIO and is logged once per segment
// with the file and the segment; wrong bytes are never returned. Reads of
// the other segments succeed.
//
// # Access
//
// Files and folders belong to the user who mounted them and have modes
// 0400 and 0500; the kernel checks them (default_permissions), and no
// other user may enter the mount unless [Options.AllowOther] is set. The
// secret key and the data keys stay in memory and are erased when the file
// system is unmounted.
//
// # Systems
//
// Mount works on Linux, with /dev/fuse; an unprivileged user needs
// fusermount3 (Debian: fuse3), root mounts directly. On other systems the
// package builds and [Mount] returns [ErrNotSupported].
package mount
