package rmqweb_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/rmqweb"
)

// A BearerToken read with its line break ("s3cret\n", from a file or a
// variable) is the token without it, in a header and through the login
// form. (A header's token, trimmed, never matched it, and the form only
// with the line break typed.) A token of spaces alone still locks the
// dashboard rather than opening it.
func TestBearerTokenWithALineBreak(t *testing.T) {
	c := seed(t, testenv.Mini(t))
	base, hc := dashboard(t, c, rmqweb.Options{BearerToken: "s3cret\n"})
	req, _ := http.NewRequest(http.MethodGet, base, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the header's token")
	resp, _ = post(t, hc, base+"login", url.Values{"token": {"s3cret"}})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "the login form's token")

	blank, _ := dashboard(t, c, rmqweb.Options{BearerToken: "  "})
	code, _ := get(t, http.DefaultClient, blank)
	assert.Equal(t, http.StatusUnauthorized, code, "a token of spaces alone")
}
