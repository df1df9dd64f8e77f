package mailtest

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime/quotedprintable"
	"strings"
)

func decode(body []byte, encoding string) string {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		b, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		if err == nil {
			return string(b)
		}
	case "base64":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(body)), ""))
		if err == nil {
			return string(b)
		}
	}
	return string(body)
}
