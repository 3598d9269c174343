//go:build !unix

package dirtrust

import "io/fs"

func fileUID(fs.FileInfo) (int, bool) { return 0, false }
