/*
 * Loaded first, synchronously, in <head>: marks the page as having JavaScript
 * (`html.js`), so the stylesheet shows controls that need it (`.needs-js`) and hides
 * what is only for pages without it (`.no-js-only`), before the first paint.
 * A file, not an inline script: the Content-Security-Policy allows no inline script.
 */
document.documentElement.classList.add("js");
