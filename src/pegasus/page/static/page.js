// The memory page works without this file; it only adds conveniences.
// Ctrl+Enter (or Cmd+Enter) in a text area sends its form, as in chat boxes.
document.addEventListener("keydown", (event) => {
  const field = event.target;
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey) &&
      field instanceof HTMLTextAreaElement && field.form) {
    event.preventDefault();
    field.form.requestSubmit();
  }
});
