package s3test

import "syscall"

// shmRoom returns the bytes free in the file system of dir, 0 if unknown.
func shmRoom(dir string) uint64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return 0
	}
	return st.Bavail * uint64(st.Bsize)
}
