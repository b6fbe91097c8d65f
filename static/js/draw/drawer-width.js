// The drawer's width: dragged by its grip, kept in the browser's storage for the next visit.

const WIDTH_KEY = "skycap-viewer.drawer-width";

/** Size the drawer from what was saved (or a default) and let `grip` resize it. */
export function resizable(grip) {
  let width = 0;
  const setWidth = (wanted) => {
    width = Math.round(Math.max(420, Math.min(window.innerWidth - 200, wanted)));
    document.documentElement.style.setProperty("--drawer-width", `${width}px`);
  };
  let saved = null;
  try {
    saved = Number(localStorage.getItem(WIDTH_KEY)) || null;
  } catch { /* no storage: default width */ }
  setWidth(saved || Math.min(820, Math.round(window.innerWidth * 0.55)));
  grip.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    grip.setPointerCapture(event.pointerId);
    const move = (e) => setWidth(window.innerWidth - e.clientX);
    const up = () => {
      grip.removeEventListener("pointermove", move);
      grip.removeEventListener("pointerup", up);
      try {
        localStorage.setItem(WIDTH_KEY, String(width));
      } catch { /* the width lasts this page only */ }
    };
    grip.addEventListener("pointermove", move);
    grip.addEventListener("pointerup", up);
  });
}
