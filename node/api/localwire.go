package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"
)

// WriteFrame writes m as one frame: a 4-byte big-endian length and the
// message, in one write.
func WriteFrame(w io.Writer, m proto.Message) error {
	b, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 4, 4+proto.Size(m)), m)
	if err != nil {
		return err
	}
	if len(b)-4 > 1<<31 {
		return ErrFrameTooLarge
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	_, err = w.Write(b)
	return err
}

// ReadFrame reads one frame of at most max bytes into m. It reads exactly
// the frame, never past it.
func ReadFrame(r io.Reader, max int, m proto.Message) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(max) {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return proto.Unmarshal(b, m)
}
