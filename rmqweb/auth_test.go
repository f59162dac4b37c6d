package rmqweb_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// The authentication scheme is case-insensitive (RFC 7235 §2.1, RFC 6750).
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, _ := dashboard(t, c, rmqweb.Options{BearerToken: "s3cret"})
	for _, header := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret"} {
		req, _ := http.NewRequest(http.MethodGet, base, nil)
		req.Header.Set("Authorization", header)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, header)
	}
}

// The login form, open to anyone, reads a bounded body: a 1 MB multipart
// "login" is refused instead of being buffered (spilled to temporary files)
// before the token is checked, as the actions' forms are bounded.
func TestLoginBodyIsBounded(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{BearerToken: "s3cret"})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("token", "s3cret"))
	fw, err := mw.CreateFormFile("junk", "junk.bin")
	require.NoError(t, err)
	_, err = fw.Write(bytes.Repeat([]byte("x"), 1<<20))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	resp, err := hc.Post(base+"login", mw.FormDataContentType(), &body)
	require.NoError(t, err)
	resp.Body.Close()
	assert.GreaterOrEqual(t, resp.StatusCode, 400, "a 1 MB multipart login form is refused")
	assert.Less(t, resp.StatusCode, 500)
}
