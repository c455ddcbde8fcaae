// @ts-check
/* The eventrelay debugger: the entry of the page's script (native ES modules, no framework, no
 * build step). It signs in and out and wires each view; each view is a module of its own:
 * live.js, search.js, message.js, overview.js (Endpoints and Last hour, drawn by chart.js),
 * sources.js (with webhooks-form.js) and schema.js, over api.js (the admin API), dom.js and
 * views.js. Every value from the server is shown with textContent, never parsed as HTML: payloads
 * come from anyone holding a write key. */
import { forgetToken, getOverview, hasToken, isUnauthorized, keepToken, messageOf, onTokenRefused } from './api.js';
import { $, button, input, notice } from './dom.js';
import { setUpLive, startStream, stopStream } from './tabs/live.js';
import { replay } from './tabs/message.js';
import { startOverview, stopOverview } from './tabs/overview.js';
import { loadSchema, setUpSchema } from './tabs/schema.js';
import { searchIfEmpty, setUpSearch } from './tabs/search.js';
import { closeEditor, hideKey, loadSources, setUpSources } from './tabs/sources.js';
import { fillSources, onShow, show, showSignIn } from './views.js';

async function signIn() {
  try {
    const overview = await getOverview();
    fillSources(overview.sources);
    $('view-signin').hidden = true;
    $('tabs').hidden = false;
    notice('');
    show('live');
    startStream();
  } catch (error) {
    if (!isUnauthorized(error)) notice(`Could not sign in: ${messageOf(error)}`);
  }
}

/**
 * Forgets the token and everything shown with it.
 * @param {string} message
 */
function signOut(message) {
  forgetToken();
  hideKey();
  closeEditor();
  stopStream();
  stopOverview();
  showSignIn();
  notice(message);
}

onTokenRefused(signOut);

onShow((view) => {
  stopOverview();
  if (view === 'endpoints' || view === 'chart') startOverview();
  if (view === 'search') searchIfEmpty();
  if (view === 'sources') void loadSources();
  if (view === 'schema') void loadSchema();
});

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = input('token').value.trim();
    input('token').value = '';
    if (!token) return;
    keepToken(token);
    void signIn();
  });
  button('sign-out').addEventListener('click', () => signOut('Signed out.'));
  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => show(/** @type {import('./views.js').View} */ (/** @type {HTMLElement} */ (tab).dataset.view)));
  }
  setUpLive();
  button('replay').addEventListener('click', replay);
  setUpSearch();
  setUpSources();
  setUpSchema();
  if (hasToken()) void signIn();
});
