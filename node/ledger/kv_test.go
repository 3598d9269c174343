package ledger

import "testing"

// TestADeletedKVRecordStaysGoneAfterReopen: DeleteKVSync removes a record
// of a keyspace, a reopened ledger does not bring it back, and the other
// records stay.
func TestADeletedKVRecordStaysGoneAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := l.PutKVSync("sp", []byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.DeleteKVSync("sp", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := l.DeleteKVSync("sp", []byte("missing")); err != nil {
		t.Fatalf("deleting a missing key: %v", err)
	}
	if err := l.DeleteKVSync("", []byte("a")); err == nil {
		t.Fatal("an empty keyspace name was accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var got []string
	if err := l.ScanKV("sp", nil, func(k, v []byte) error { got = append(got, string(k)+"="+string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "b=vb" {
		t.Fatalf("after reopen: %v, want [b=vb]", got)
	}
}
