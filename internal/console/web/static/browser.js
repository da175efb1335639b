// Coffer console: the object browser's uploads, selection and copy
// button. Hand-written, no build step, no dependencies. Navigation,
// details, download, share and delete work without it; uploads need it.
//
// Uploads go to the console's own endpoints (see internal/console/upload.go)
// with the session cookie and the CSRF token in the X-CSRF-Token header;
// the browser never holds a secret or a presigned URL. A file up to
// PART_SIZE goes in one request; a larger one as a multipart upload of
// PART_SIZE parts, PARALLEL of them in flight, and Cancel aborts it.
"use strict";

(function () {
  const PART_SIZE = 8 * 1024 * 1024; // bytes per part; S3's minimum is 5 MiB
  const PARALLEL = 3; // parts of one file in flight at once
  const FILES_AT_ONCE = 2; // files uploading at once

  const panel = document.getElementById("upload");
  if (panel) {
    setUpUploads(panel);
  }
  const all = document.getElementById("select-all");
  if (all) {
    all.hidden = false;
    all.addEventListener("change", function () {
      for (const box of document.querySelectorAll('#objects input[name="key"]')) {
        box.checked = all.checked;
      }
    });
  }
  const copy = document.getElementById("copy");
  const shareURL = document.getElementById("share-url");
  if (copy && shareURL) {
    copy.hidden = false;
    copy.addEventListener("click", async function () {
      shareURL.select();
      try {
        await navigator.clipboard.writeText(shareURL.value);
        copy.textContent = "Copied";
      } catch (e) {
        copy.textContent = "Press Ctrl+C to copy";
      }
    });
  }

  function setUpUploads(panel) {
    panel.hidden = false;
    const bucket = panel.dataset.bucket;
    const prefix = panel.dataset.prefix;
    const csrf = panel.dataset.csrf;
    const list = document.getElementById("uploads");
    const done = document.getElementById("uploads-done");
    const queue = [];
    let running = 0;

    for (const id of ["files", "folder"]) {
      const input = document.getElementById(id);
      input.addEventListener("change", function () {
        for (const f of input.files) {
          // A folder's files carry their path below the chosen folder.
          queue.push(newUpload(f, prefix + (f.webkitRelativePath || f.name)));
        }
        input.value = "";
        pump();
      });
    }

    function pump() {
      while (running < FILES_AT_ONCE && queue.length > 0) {
        const u = queue.shift();
        running++;
        u.run().finally(function () {
          running--;
          if (running === 0 && queue.length === 0) {
            done.hidden = false;
          }
          pump();
        });
      }
    }

    // newUpload adds a row with a progress bar and a Cancel button for
    // file f, to be stored as key.
    function newUpload(f, key) {
      const li = document.createElement("li");
      li.dataset.key = key;
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = key;
      const bar = document.createElement("progress");
      bar.max = Math.max(f.size, 1);
      bar.value = 0;
      const status = document.createElement("span");
      status.className = "status";
      status.textContent = "waiting";
      const cancel = document.createElement("button");
      cancel.type = "button";
      cancel.className = "link cancel";
      cancel.textContent = "Cancel";
      li.append(name, bar, status, cancel);
      list.append(li);

      const u = {
        cancelled: false,
        xhrs: new Set(),
        uploadId: "",
        run: async function () {
          if (u.cancelled) {
            return;
          }
          status.textContent = "uploading";
          try {
            if (f.size <= PART_SIZE) {
              await send("upload", {key: key}, f, f.type || "application/octet-stream", function (n) { show(n); });
            } else {
              await multipart();
            }
            bar.value = bar.max;
            status.textContent = "done";
            li.classList.add("done");
          } catch (e) {
            li.classList.add("failed");
            status.textContent = u.cancelled ? "cancelled" : "failed: " + e.message;
          }
          cancel.disabled = true;
        },
      };
      cancel.addEventListener("click", async function () {
        u.cancelled = true;
        cancel.disabled = true;
        for (const x of u.xhrs) {
          x.abort();
        }
        status.textContent = "cancelled";
        if (u.uploadId) {
          try {
            await send("uploads/abort", {key: key, uploadId: u.uploadId}, null);
          } catch (e) {
            status.textContent = "cancelled; abort failed: " + e.message;
          }
        }
      });

      function show(n) {
        bar.value = n;
        status.textContent = Math.floor((100 * n) / bar.max) + " %";
      }

      async function multipart() {
        const created = await send("uploads", {key: key, contentType: f.type || "application/octet-stream"}, null);
        u.uploadId = created.uploadId;
        if (u.cancelled) {
          throw new Error("cancelled");
        }
        const count = Math.ceil(f.size / PART_SIZE);
        const loaded = new Array(count).fill(0);
        const etags = new Array(count);
        let next = 0;
        async function worker() {
          while (next < count && !u.cancelled) {
            const i = next++;
            const blob = f.slice(i * PART_SIZE, Math.min(f.size, (i + 1) * PART_SIZE));
            const res = await send("uploads/part", {key: key, uploadId: u.uploadId, partNumber: i + 1}, blob,
              "application/octet-stream", function (n) {
                loaded[i] = n;
                show(loaded.reduce(function (a, b) { return a + b; }, 0));
              });
            etags[i] = res.etag;
          }
        }
        const workers = [];
        for (let w = 0; w < Math.min(PARALLEL, count); w++) {
          workers.push(worker());
        }
        try {
          await Promise.all(workers);
          if (u.cancelled) {
            throw new Error("cancelled");
          }
        } catch (e) {
          if (!u.cancelled) {
            u.cancelled = true;
            for (const x of u.xhrs) {
              x.abort();
            }
            await send("uploads/abort", {key: key, uploadId: u.uploadId}, null).catch(function () {});
          }
          throw e;
        }
        const parts = etags.map(function (etag, i) { return {partNumber: i + 1, etag: etag}; });
        await send("uploads/complete", {key: key, uploadId: u.uploadId}, JSON.stringify({parts: parts}), "application/json");
      }

      // send POSTs body to the upload endpoint path with query q and
      // resolves to its JSON answer; progress gets the bytes sent.
      function send(path, q, body, type, progress) {
        return new Promise(function (resolve, reject) {
          const x = new XMLHttpRequest();
          u.xhrs.add(x);
          x.open("POST", "/objects/" + encodeURIComponent(bucket) + "/" + path + "?" + new URLSearchParams(q).toString());
          x.setRequestHeader("X-CSRF-Token", csrf);
          if (type) {
            x.setRequestHeader("Content-Type", type);
          }
          if (progress) {
            x.upload.addEventListener("progress", function (ev) { progress(ev.loaded); });
          }
          x.addEventListener("loadend", function () {
            u.xhrs.delete(x);
            if (x.status === 0) {
              reject(new Error(u.cancelled ? "cancelled" : "connection failed"));
              return;
            }
            let answer = {};
            try {
              answer = x.responseText ? JSON.parse(x.responseText) : {};
            } catch (e) {
              answer = {error: "HTTP " + x.status};
            }
            if (x.status >= 300) {
              reject(new Error(answer.error || "HTTP " + x.status));
              return;
            }
            if (x.status !== 204 && !answer.etag && !answer.uploadId) {
              // Every stored upload is answered with what was stored.
              reject(new Error("the server's answer says nothing was stored (HTTP " + x.status + ")"));
              return;
            }
            resolve(answer);
          });
          x.send(body === null ? "" : body);
        });
      }
      return u;
    }
  }
})();
