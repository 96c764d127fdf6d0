// CodeMirror styles itself through style-mod, which, in a document (not a shadow root), writes its
// rules into a <style> element: the page's Content-Security-Policy (style-src 'self') blocks that.
// Here a <style> element inserted at the top of <head> becomes a constructed stylesheet (CSSOM, which
// the policy allows) adopted by the document; style-mod re-inserts its element whenever its rules
// change (the element never gets a parent), so each insertion refreshes the sheet.
let installed = false;

export function adoptInsertedStyles() {
  if (installed || !document.adoptedStyleSheets || !window.CSSStyleSheet) return;
  installed = true;
  const { head } = document;
  const insertBefore = head.insertBefore.bind(head);
  const sheets = new WeakMap(); // <style> element → its constructed sheet
  head.insertBefore = (node, ref) => {
    if (!(node instanceof HTMLStyleElement) || node.nonce) return insertBefore(node, ref);
    let sheet = sheets.get(node);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheets.set(node, sheet);
      document.adoptedStyleSheets = [sheet, ...document.adoptedStyleSheets]; // first, as style-mod puts its tag
    }
    sheet.replaceSync(node.textContent);
    return node;
  };
}
