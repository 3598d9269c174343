package main

// wireRuntime is the light codec's primitives, written beside the
// messages (wire.harn.go): the subset of protobuf's wire format the
// messages use, in the standard library only.
const wireRuntime = `
import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Wire types.
const (
	wtVarint     = 0
	wtFixed64    = 1
	wtBytes      = 2
	wtStartGroup = 3
	wtEndGroup   = 4
	wtFixed32    = 5
)

// ErrMalformed: bytes that are not a protobuf message of the expected
// shape.
var ErrMalformed = errors.New("hookwire: malformed message")

func tag(b []byte, num, wt int) []byte { return binary.AppendUvarint(b, uint64(num)<<3|uint64(wt)) }

func putString(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	s = strings.ToValidUTF8(s, "\uFFFD") // proto3 strings are UTF-8
	b = tag(b, num, wtBytes)
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func putBytes(b []byte, num int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = tag(b, num, wtBytes)
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// putStrings is a repeated string: every element, empty ones too.
func putStrings(b []byte, num int, ss []string) []byte {
	for _, s := range ss {
		s = strings.ToValidUTF8(s, "\uFFFD")
		b = tag(b, num, wtBytes)
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func putInt(b []byte, num int, v int64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(tag(b, num, wtVarint), uint64(v))
}

func putUint(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(tag(b, num, wtVarint), v)
}

func putBool(b []byte, num int, v bool) []byte {
	if !v {
		return b
	}
	return append(tag(b, num, wtVarint), 1)
}

// putMsg writes a set message field (an empty one too, as protobuf does):
// enc appends the message's fields.
func putMsg(b []byte, num int, enc func([]byte) []byte) []byte {
	inner := enc(nil)
	b = tag(b, num, wtBytes)
	b = binary.AppendUvarint(b, uint64(len(inner)))
	return append(b, inner...)
}

// reader reads a message's fields in order.
type reader struct {
	b     []byte
	err   error
	num   int // the last field's number
	depth int // groups being skipped
}

// next reads a field's key; false at the end or on an error (r.err).
func (r *reader) next() (num, wt int, ok bool) {
	if len(r.b) == 0 || r.err != nil {
		return 0, 0, false
	}
	k, n := binary.Uvarint(r.b)
	if n <= 0 || k>>3 == 0 || k>>3 > math.MaxInt32 {
		r.err = fmt.Errorf("%w: bad field key", ErrMalformed)
		return 0, 0, false
	}
	r.b = r.b[n:]
	r.num = int(k >> 3)
	return r.num, int(k & 7), true
}

func (r *reader) varint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	l := r.varint()
	if r.err != nil {
		return nil
	}
	if l > uint64(len(r.b)) {
		r.fail("length past the end")
		return nil
	}
	v := r.b[:l:l]
	r.b = r.b[l:]
	return v
}

func (r *reader) fail(why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, why)
	}
	r.b = nil
}

// skip passes over a field of wire type wt (an unknown field, or a known
// one of another type).
func (r *reader) skip(wt int) {
	switch wt {
	case wtVarint:
		r.varint()
	case wtFixed64:
		if len(r.b) < 8 {
			r.fail("short fixed64")
			return
		}
		r.b = r.b[8:]
	case wtBytes:
		r.bytes()
	case wtFixed32:
		if len(r.b) < 4 {
			r.fail("short fixed32")
			return
		}
		r.b = r.b[4:]
	case wtStartGroup:
		r.skipGroup(r.num)
	default:
		r.fail(fmt.Sprintf("wire type %d", wt))
	}
}

// maxGroupDepth bounds nested groups, as protobuf bounds recursion.
const maxGroupDepth = 100

// skipGroup passes over a (deprecated, proto2) group of field num: its
// fields up to its end marker.
func (r *reader) skipGroup(num int) {
	if r.depth++; r.depth > maxGroupDepth {
		r.fail("groups nested too deep")
		return
	}
	defer func() { r.depth-- }()
	for {
		n, wt, ok := r.next()
		if !ok {
			r.fail("unterminated group")
			return
		}
		if wt == wtEndGroup {
			if n != num {
				r.fail("mismatched group end")
			}
			return
		}
		r.skip(wt)
	}
}

// str reads a string field of wire type wt, or skips a field of another
// type.
func (r *reader) str(wt int) string {
	if wt != wtBytes {
		r.skip(wt)
		return ""
	}
	return string(r.bytes())
}

func (r *reader) int(wt int) uint64 {
	if wt != wtVarint {
		r.skip(wt)
		return 0
	}
	return r.varint()
}

// msg reads a message field into dec; false when it is of another wire
// type (skipped) or malformed (r.err).
func (r *reader) msg(wt int, dec func([]byte) error) bool {
	if wt != wtBytes {
		r.skip(wt)
		return false
	}
	b := r.bytes()
	if r.err != nil {
		return false
	}
	if err := dec(b); err != nil {
		r.err = err
		r.b = nil
		return false
	}
	return true
}

// byteField reads a bytes field of wire type wt, or skips a field of
// another type.
func (r *reader) byteField(wt int) []byte {
	if wt != wtBytes {
		r.skip(wt)
		return nil
	}
	return r.bytes()
}

// entry reads a map<string, string> entry.
func (r *reader) entry(wt int) (k, v string, ok bool) {
	ok = r.msg(wt, func(e []byte) error {
		er := reader{b: e}
		for {
			n, t, ok := er.next()
			if !ok {
				return er.err
			}
			switch n {
			case 1:
				k = er.str(t)
			case 2:
				v = er.str(t)
			default:
				er.skip(t)
			}
		}
	})
	return k, v, ok
}
`
