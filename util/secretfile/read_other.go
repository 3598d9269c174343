//go:build !unix

package secretfile

import "os"

func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
