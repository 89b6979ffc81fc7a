() => {
  // Helpers of a page session (crates/browser/src/session.rs): locating elements by the rules
  // documented there, reading the page's text, and the agent's snapshot.
  const norm = (s) => (s || "").replace(/\s+/g, " ").trim().toLowerCase();
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  };
  const refs = (window.__complianceRefs ||= { byRef: new Map(), byElement: new WeakMap(), next: 1 });
  const reference = (el) => {
    let ref = refs.byElement.get(el);
    if (!ref) {
      ref = "e" + refs.next++;
      refs.byElement.set(el, ref);
      refs.byRef.set(ref, el);
    }
    return ref;
  };
  const byReference = (ref) => {
    const el = refs.byRef.get(ref);
    return el && el.isConnected ? el : null;
  };
  const CLICKABLE =
    "button, a[href], label, summary, input[type=submit], input[type=button], input[type=reset], " +
    "[role=button], [role=link], [role=tab], [role=menuitem], [role=checkbox], [role=option]";
  const textOf = (el) => {
    if (el.tagName === "INPUT") return el.value || el.getAttribute("aria-label") || "";
    return el.innerText || el.getAttribute("aria-label") || el.getAttribute("title") || "";
  };
  const innermost = (matches) => matches.find((m) => !matches.some((o) => o !== m && m.contains(o))) || null;
  const byText = (needle) => {
    const n = norm(needle);
    const clickable = [...document.querySelectorAll(CLICKABLE)].filter(visible);
    const all = [...document.body.querySelectorAll("*")].filter(visible);
    const equal = (el) => norm(textOf(el)) === n;
    const contains = (el) => norm(textOf(el)).includes(n);
    return (
      clickable.find(equal) || innermost(all.filter(equal)) ||
      clickable.find(contains) || innermost(all.filter(contains))
    );
  };
  const FIELDS =
    "input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=reset])" +
    ":not([type=checkbox]):not([type=radio]):not([type=image]), textarea, [contenteditable=''], [contenteditable=true]";
  const labelOf = (el) => {
    const texts = [...(el.labels || [])].map((l) => l.innerText);
    texts.push(el.getAttribute("aria-label") || "");
    const by = el.getAttribute("aria-labelledby");
    if (by) by.split(/\s+/).forEach((id) => texts.push((document.getElementById(id) || {}).innerText || ""));
    return texts.map(norm).filter((t) => t);
  };
  const byField = (needle) => {
    const n = norm(needle);
    const fields = [...document.querySelectorAll(FIELDS)].filter(visible);
    const placeholder = (el) => norm(el.getAttribute("placeholder"));
    return (
      fields.find((el) => labelOf(el).includes(n)) ||
      fields.find((el) => placeholder(el) === n) ||
      fields.find((el) => norm(el.getAttribute("name")) === n) ||
      fields.find((el) => labelOf(el).some((l) => l.includes(n))) ||
      fields.find((el) => placeholder(el).includes(n) && n)
    );
  };
  const find = (kind, needle) => {
    if (kind === "text") return byText(needle);
    if (kind === "field") return byField(needle);
    if (kind === "reference") return byReference(needle);
    try {
      return [...document.querySelectorAll(needle)].find(visible);
    } catch (e) {
      return { error: "the selector \"" + needle + "\" is not valid CSS" };
    }
  };
  return {
    locate(kind, needle) {
      const el = find(kind, needle);
      if (!el) return {};
      if (el.error) return el;
      el.scrollIntoView({ block: "center", inline: "center" });
      const r = el.getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    },
    focusField(kind, needle) {
      const el = find(kind, needle);
      if (!el) return {};
      el.scrollIntoView({ block: "center" });
      el.focus();
      if ("value" in el) el.value = "";
      else el.textContent = "";
      window.__complianceTyped = el;
      return { focused: document.activeElement === el };
    },
    changed() {
      const el = window.__complianceTyped;
      if (el) el.dispatchEvent(new Event("change", { bubbles: true }));
      return true;
    },
    scroll(sign) {
      window.scrollBy(0, sign * window.innerHeight * 0.8);
      return true;
    },
    containsText(text) {
      return norm(document.body ? document.body.innerText : "").includes(norm(text));
    },
    snapshot(textMax, elementsMax) {
      const INTERACTIVE =
        CLICKABLE + ", input:not([type=hidden]), select, textarea, [contenteditable=''], [contenteditable=true]";
      const roleOf = (el) => {
        const role = el.getAttribute("role");
        if (role) return role;
        const tag = el.tagName.toLowerCase();
        if (tag === "a") return "link";
        if (tag === "select") return "combobox";
        if (tag === "textarea") return "textbox";
        if (tag === "input") {
          const type = (el.getAttribute("type") || "text").toLowerCase();
          if (["submit", "button", "reset"].includes(type)) return "button";
          if (["checkbox", "radio"].includes(type)) return type;
          return "textbox";
        }
        return tag;
      };
      const nameOf = (el) => {
        const name = el.tagName === "INPUT" && !["submit", "button", "reset"].includes(el.type)
          ? labelOf(el)[0] || el.getAttribute("placeholder") || el.getAttribute("name") || ""
          : textOf(el);
        return name.replace(/\s+/g, " ").trim().slice(0, 100);
      };
      const elements = [...document.querySelectorAll(INTERACTIVE)]
        .filter(visible)
        .slice(0, elementsMax)
        .map((el) => ({ reference: reference(el), role: roleOf(el), name: nameOf(el) }));
      const text = (document.body ? document.body.innerText : "").replace(/[ \t]+/g, " ").slice(0, textMax);
      return { url: location.href, title: document.title, text, elements };
    },
  };
}
