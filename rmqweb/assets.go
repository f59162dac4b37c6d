package rmqweb

import (
	"embed"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"path"
)

// assets holds the page templates and the static files.
//
//go:embed templates/*.html static/*
var assets embed.FS

// pages are the parsed templates, one set per page: the layout with the
// page's "content".
type pages map[string]*template.Template

// pageNames are the templates under templates/ besides layout.html.
var pageNames = []string{"topics", "topic", "workers", "login", "error"}

// parsePages parses every page; a broken template is a bug, found by any test.
func parsePages() pages {
	funcs := template.FuncMap{"printable": printable, "duration": humanDuration, "relative": relative,
		"clock": clockTime, "count": count, "rate": rate, "processes": processes}
	out := make(pages, len(pageNames))
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

// execute writes page name with data.
func (p pages) execute(w io.Writer, name string, data any) error {
	return p[name].Execute(w, data)
}

// serveStatic serves an embedded static file.
func serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "static files are read with GET", http.StatusMethodNotAllowed)
		return
	}
	sub, _ := fs.Sub(assets, "static")
	if _, err := fs.Stat(sub, path.Clean(name)); err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	http.ServeFileFS(w, r, sub, path.Clean(name))
}
