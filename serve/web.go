package serve

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed web
var webFS embed.FS

// pageHandler serves the web page: plain HTML, CSS and JavaScript embedded
// in the binary, no build step and nothing fetched from elsewhere. The
// assets hold no secret; the page asks for the token and sends it to the
// API as a bearer token.
func pageHandler() http.HandlerFunc {
	sub, err := fs.Sub(webFS, "web")
	if err != nil {
		panic(err) // the embedded tree is part of the binary
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
