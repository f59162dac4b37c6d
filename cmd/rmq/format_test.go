package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormatContent checks that contents print quoted, or in hex when not printable.
func TestFormatContent(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("sku:42"), `"sku:42"`},
		{[]byte(`say "hi"`), `"say \"hi\""`},
		{[]byte("two\nlines\tand tab"), `"two\nlines\tand tab"`},
		{[]byte("grüße, 世界"), `"grüße, 世界"`},
		{[]byte{0xff, 0x00, 0x01}, "hex:ff0001"},
		{[]byte("bell\a"), "hex:62656c6c07"},
		{[]byte("\x1b[31mred"), "hex:1b5b33316d726564"}, // a terminal escape is not printed as is
	} {
		assert.Equal(t, tc.want, formatContent(tc.in), "%q", tc.in)
		back, err := parseContent(tc.want)
		require.NoError(t, err, "requeue -printed reads %s", tc.want)
		assert.Equal(t, tc.in, back, "requeue -printed reads %s back", tc.want)
	}
	for _, bad := range []string{"sku:42", "hex:", "hex:zz", `"unterminated`} {
		_, err := parseContent(bad)
		assert.Error(t, err, "%s", bad)
	}
}

// TestPlural checks counted nouns.
func TestPlural(t *testing.T) {
	assert.Equal(t, "0 dead messages", plural(0, "dead message"))
	assert.Equal(t, "1 dead message", plural(1, "dead message"))
	assert.Equal(t, "2 dead messages", plural(2, "dead message"))
}

// TestParseArgs checks flags among positional arguments and "--".
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		pos  []string
		all  bool
	}{
		{"flags first", []string{"-all", "t"}, []string{"t"}, true},
		{"flags last", []string{"t", "-all"}, []string{"t"}, true},
		{"flags between", []string{"t", "-all", "a", "b"}, []string{"t", "a", "b"}, true},
		{"no flags", []string{"t", "a"}, []string{"t", "a"}, false},
		{"dash dash", []string{"t", "--", "-all", "-x"}, []string{"t", "-all", "-x"}, false},
		{"nothing", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			all := fs.Bool("all", false, "")
			pos, err := parseArgs(fs, tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.pos, pos)
			assert.Equal(t, tc.all, *all)
		})
	}
}
