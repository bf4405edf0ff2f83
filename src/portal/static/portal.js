// veil admin portal: the only script, served from /admin/static (the CSP allows no inline script).
// It adds conveniences; every page works without it.
document.addEventListener('click', (event) => {
  const button = event.target.closest('[data-copy]');
  if (!button) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (!source) return;
  navigator.clipboard.writeText(source.textContent).then(
    () => {
      button.textContent = 'Copied';
    },
    () => {
      button.textContent = 'Select the text and copy it';
    },
  );
});
