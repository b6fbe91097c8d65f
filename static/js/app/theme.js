// Light and dark follow the system until the user picks one; the pick is remembered.

const KEY = "skycap-viewer.theme";

function stored() {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

function systemTheme() {
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function apply(theme, button) {
  const shown = theme || systemTheme();
  document.documentElement.dataset.theme = shown;
  button.textContent = shown === "dark" ? "☾" : "☀";
  button.title = `${shown} theme (${theme ? "your choice" : "following the system"}); click to switch`;
  button.setAttribute("aria-label", button.title);
}

export function setupTheme(button) {
  apply(stored(), button);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => apply(stored(), button));
  button.addEventListener("click", () => {
    const next = (document.documentElement.dataset.theme || systemTheme()) === "dark" ? "light" : "dark";
    try {
      localStorage.setItem(KEY, next);
    } catch { /* private mode: the choice lasts this page only */ }
    apply(next, button);
  });
}
