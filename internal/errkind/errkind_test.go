package errkind

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestOf(t *testing.T) {
	errData := New(Data, "bad data")
	errKey := New(Key, "bad key")
	for _, tc := range []struct {
		err  error
		want Kind
	}{
		{nil, Other},
		{io.EOF, Other},
		{errData, Data},
		{fmt.Errorf("reading: %w", errData), Data},
		{fmt.Errorf("%w: %w", errKey, errData), Key}, // the first one wins
		{Wrap(Usage, io.EOF), Usage},
		{Wrap(Usage, errData), Usage},
		{fmt.Errorf("x: %w", Wrap(Key, errors.New("no such file"))), Key},
		{Errorf(Data, "segment %d: %w", 3, io.ErrUnexpectedEOF), Data},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if Wrap(Key, nil) != nil {
		t.Error("Wrap(Key, nil) is not nil")
	}
	w := Wrap(Usage, io.EOF)
	if w.Error() != io.EOF.Error() || !errors.Is(w, io.EOF) {
		t.Errorf("Wrap changed the message or the chain: %v", w)
	}
}
