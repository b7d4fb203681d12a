/*
 * Loaded first, synchronously, in <head>: marks the page as having JavaScript
 * (`html.js`), so the stylesheet shows the controls that need it (`.needs-js`) and the
 * drawn charts instead of their tables, before the first paint.
 * A file, not an inline script: the Content-Security-Policy allows no inline script.
 */
document.documentElement.classList.add("js");
