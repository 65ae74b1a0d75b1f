// Satchel operator console: small progressive enhancements; every page works without them.
// A form with data-confirm asks before it is sent (deleting an asset cannot be undone).
for (const form of document.querySelectorAll("form[data-confirm]")) {
  form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
}
