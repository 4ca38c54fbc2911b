package bench

import (
	"encoding/json"
	"fmt"
	"io"
)

// writeJSON writes v, a study named what, to w as indented JSON and a
// newline: every study's WriteJSON.
func writeJSON(w io.Writer, v any, what string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s json: %w", what, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
