// The account page's copy button: an enhancement only; without JavaScript the token stays
// selectable in its read-only field.
for (const button of document.querySelectorAll("button[data-copy]")) {
  const field = document.getElementById(button.dataset.copy);
  if (!field || !navigator.clipboard) continue;
  button.hidden = false;
  button.addEventListener("click", async () => {
    await navigator.clipboard.writeText(field.value);
    const done = document.getElementById("copy-done");
    if (done) done.hidden = false;
  });
}
