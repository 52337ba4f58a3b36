package models_test

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/models"
)

// ParseOptions: the spellings of the cache's type and write mode, and the
// error naming a bad one.
func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		kvType, kvWrite string
		want            models.Options
		err             string
	}{
		{"f16", "set_rows", models.Options{NCtx: 64, KVType: models.KVF16, KVWrite: models.KVSetRows}, ""},
		{"f32", "cpy", models.Options{NCtx: 64, KVType: models.KVF32, KVWrite: models.KVCpy}, ""},
		{"", "", models.Options{NCtx: 64}, ""},
		{"q8_0", "cpy", models.Options{}, `KV cache type "q8_0" is not supported`},
		{"f16", "copy", models.Options{}, `unknown KV write mode "copy"`},
	} {
		got, err := models.ParseOptions(64, c.kvType, c.kvWrite)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseOptions(%q, %q): %v, want %q", c.kvType, c.kvWrite, err, c.err)
			}
			continue
		}
		if err != nil || got.NCtx != c.want.NCtx || got.KVType != c.want.KVType || got.KVWrite != c.want.KVWrite {
			t.Errorf("ParseOptions(%q, %q) = %+v, %v; want %+v", c.kvType, c.kvWrite, got, err, c.want)
		}
	}
}
