// Package validation is the one shape of "what you typed is wrong": a
// message per field, in words for the person who typed it. Circuits, jobs,
// apps and channels all answer with it, so forms and the API show every
// problem the same way.
package validation

import (
	"fmt"
	"strings"
)

// FieldError is one problem with one field.
type FieldError struct {
	Field   string
	Message string
}

// Error lists every problem found, one per field at most.
type Error []FieldError

func (v Error) Error() string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid: " + strings.Join(parts, "; ")
}

// For returns the message for a field, or "".
func (v Error) For(field string) string {
	for _, f := range v {
		if f.Field == field {
			return f.Message
		}
	}
	return ""
}

// Add records a problem with field.
func (v *Error) Add(field, format string, args ...any) {
	*v = append(*v, FieldError{field, fmt.Sprintf(format, args...)})
}

// Err is v as an error, or nil when there is no problem.
func (v Error) Err() error {
	if len(v) == 0 {
		return nil
	}
	return v
}
