"""Fake web sites and their boilerplate.

Each Site has a theme (wpblog, news, forum, docs, farm, qa, pub, corp) that wraps a
main-content fragment into a complete page with the usual clutter: <head> with
analytics/ads scripts, header and navigation menus, breadcrumbs, cookie banner,
sidebars ("popular posts", archives, tag cloud), "related articles", comment
sections, newsletter boxes and fat footers.  All randomness comes from the rng
passed in, so pages are reproducible.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from html import escape

# ---------------------------------------------------------------- labels

L = {
    "en": dict(
        home="Home",
        news="News",
        about="About us",
        contact="Contact",
        privacy="Privacy Policy",
        terms="Terms of Use",
        imprint="Legal notice",
        search="Search",
        categories="Categories",
        tags="Tags",
        recent="Recent Posts",
        popular="Popular this week",
        related="Related articles",
        comments="Comments",
        leave="Leave a Reply",
        name="Name",
        reply="Reply",
        by="By",
        read_more="Read more",
        share="Share this article",
        subscribe="Subscribe",
        newsletter="Get the best articles in your inbox every week. No spam, unsubscribe at any time.",
        cookie="We use cookies to improve your experience, analyse traffic and show personalised ads. By clicking “Accept all” you consent to our use of cookies.",
        accept="Accept all",
        reject="Reject",
        settings="Cookie settings",
        rights="All rights reserved.",
        sitemap="Sitemap",
        login="Log in",
        register="Register",
        next="Next",
        prev="Previous",
        page="Page",
        ad="Advertisement",
        archives="Archives",
        maylike="You may also like",
        docs="Documentation",
        edit="Edit this page",
        updated="Last updated",
        views="views",
        answers="answers",
        asked="asked",
        votes="votes",
        posts="posts",
        joined="Joined",
        thread="Thread",
        forum="Forum",
        trending="Trending",
        follow="Follow",
        min_read="min read",
        skip="Skip to content",
        menu="Menu",
        top="Back to top",
        careers="Careers",
        press="Press",
        help="Help Center",
        status="System status",
        more="More",
        written="Written by",
        toc="On this page",
        version="Version",
        was_helpful="Was this page helpful?",
        yes="Yes",
        no="No",
        sponsored="Sponsored",
        related_searches="Related searches",
    ),
    "de": dict(
        home="Startseite",
        news="Aktuelles",
        about="Über uns",
        contact="Kontakt",
        privacy="Datenschutz",
        terms="Nutzungsbedingungen",
        imprint="Impressum",
        search="Suche",
        categories="Kategorien",
        tags="Schlagwörter",
        recent="Neueste Beiträge",
        popular="Beliebt diese Woche",
        related="Ähnliche Artikel",
        comments="Kommentare",
        leave="Schreibe einen Kommentar",
        name="Name",
        reply="Antworten",
        by="Von",
        read_more="Weiterlesen",
        share="Artikel teilen",
        subscribe="Abonnieren",
        newsletter="Die besten Artikel jede Woche in Ihrem Postfach. Kein Spam, jederzeit abbestellbar.",
        cookie="Wir verwenden Cookies, um Ihnen ein optimales Nutzererlebnis zu bieten, Zugriffe zu analysieren und personalisierte Werbung anzuzeigen. Mit „Alle akzeptieren“ stimmen Sie der Verwendung zu.",
        accept="Alle akzeptieren",
        reject="Ablehnen",
        settings="Einstellungen",
        rights="Alle Rechte vorbehalten.",
        sitemap="Sitemap",
        login="Anmelden",
        register="Registrieren",
        next="Weiter",
        prev="Zurück",
        page="Seite",
        ad="Anzeige",
        archives="Archiv",
        maylike="Das könnte Sie auch interessieren",
        docs="Dokumentation",
        edit="Diese Seite bearbeiten",
        updated="Zuletzt aktualisiert",
        views="Aufrufe",
        answers="Antworten",
        asked="gefragt",
        votes="Stimmen",
        posts="Beiträge",
        joined="Registriert",
        thread="Thema",
        forum="Forum",
        trending="Im Trend",
        follow="Folgen",
        min_read="Min. Lesezeit",
        skip="Zum Inhalt springen",
        menu="Menü",
        top="Nach oben",
        careers="Karriere",
        press="Presse",
        help="Hilfe",
        status="Systemstatus",
        more="Mehr",
        written="Geschrieben von",
        toc="Auf dieser Seite",
        version="Version",
        was_helpful="War diese Seite hilfreich?",
        yes="Ja",
        no="Nein",
        sponsored="Gesponsert",
        related_searches="Verwandte Suchanfragen",
    ),
    "fr": dict(
        home="Accueil",
        news="Actualités",
        about="À propos",
        contact="Contact",
        privacy="Politique de confidentialité",
        terms="Conditions d’utilisation",
        imprint="Mentions légales",
        search="Rechercher",
        categories="Catégories",
        tags="Étiquettes",
        recent="Articles récents",
        popular="Populaires cette semaine",
        related="Articles similaires",
        comments="Commentaires",
        leave="Laisser un commentaire",
        name="Nom",
        reply="Répondre",
        by="Par",
        read_more="Lire la suite",
        share="Partager cet article",
        subscribe="S’abonner",
        newsletter="Recevez chaque semaine nos meilleurs articles. Pas de spam, désinscription en un clic.",
        cookie="Nous utilisons des cookies pour améliorer votre expérience, mesurer l’audience et vous proposer des publicités personnalisées. En cliquant sur « Tout accepter », vous consentez à leur utilisation.",
        accept="Tout accepter",
        reject="Refuser",
        settings="Paramétrer",
        rights="Tous droits réservés.",
        sitemap="Plan du site",
        login="Connexion",
        register="Inscription",
        next="Suivant",
        prev="Précédent",
        page="Page",
        ad="Publicité",
        archives="Archives",
        maylike="Vous aimerez aussi",
        docs="Documentation",
        edit="Modifier cette page",
        updated="Dernière mise à jour",
        views="vues",
        answers="réponses",
        asked="posée",
        votes="votes",
        posts="messages",
        joined="Inscrit le",
        thread="Sujet",
        forum="Forum",
        trending="Tendances",
        follow="Suivre",
        min_read="min de lecture",
        skip="Aller au contenu",
        menu="Menu",
        top="Haut de page",
        careers="Recrutement",
        press="Presse",
        help="Aide",
        status="État du service",
        more="Plus",
        written="Écrit par",
        toc="Sur cette page",
        version="Version",
        was_helpful="Cette page vous a-t-elle été utile ?",
        yes="Oui",
        no="Non",
        sponsored="Sponsorisé",
        related_searches="Recherches associées",
    ),
    "es": dict(
        home="Inicio",
        news="Noticias",
        about="Quiénes somos",
        contact="Contacto",
        privacy="Política de privacidad",
        terms="Términos de uso",
        imprint="Aviso legal",
        search="Buscar",
        categories="Categorías",
        tags="Etiquetas",
        recent="Entradas recientes",
        popular="Lo más leído",
        related="Artículos relacionados",
        comments="Comentarios",
        leave="Deja un comentario",
        name="Nombre",
        reply="Responder",
        by="Por",
        read_more="Leer más",
        share="Compartir",
        subscribe="Suscribirse",
        newsletter="Recibe los mejores artículos cada semana. Sin spam, puedes darte de baja cuando quieras.",
        cookie="Utilizamos cookies propias y de terceros para mejorar tu experiencia, analizar el tráfico y mostrar publicidad personalizada. Si pulsas «Aceptar todo» consientes su uso.",
        accept="Aceptar todo",
        reject="Rechazar",
        settings="Configurar",
        rights="Todos los derechos reservados.",
        sitemap="Mapa del sitio",
        login="Iniciar sesión",
        register="Registrarse",
        next="Siguiente",
        prev="Anterior",
        page="Página",
        ad="Publicidad",
        archives="Archivo",
        maylike="También te puede interesar",
        docs="Documentación",
        edit="Editar esta página",
        updated="Última actualización",
        views="visitas",
        answers="respuestas",
        asked="preguntada",
        votes="votos",
        posts="mensajes",
        joined="Registrado",
        thread="Tema",
        forum="Foro",
        trending="Tendencias",
        follow="Seguir",
        min_read="min de lectura",
        skip="Saltar al contenido",
        menu="Menú",
        top="Volver arriba",
        careers="Empleo",
        press="Prensa",
        help="Ayuda",
        status="Estado del servicio",
        more="Más",
        written="Escrito por",
        toc="En esta página",
        version="Versión",
        was_helpful="¿Te ha resultado útil esta página?",
        yes="Sí",
        no="No",
        sponsored="Patrocinado",
        related_searches="Búsquedas relacionadas",
    ),
    "ja": dict(
        home="ホーム",
        news="ニュース",
        about="運営者情報",
        contact="お問い合わせ",
        privacy="プライバシーポリシー",
        terms="利用規約",
        imprint="特定商取引法に基づく表記",
        search="検索",
        categories="カテゴリー",
        tags="タグ",
        recent="最近の投稿",
        popular="人気記事ランキング",
        related="関連記事",
        comments="コメント",
        leave="コメントを残す",
        name="名前",
        reply="返信",
        by="投稿者:",
        read_more="続きを読む",
        share="この記事をシェアする",
        subscribe="購読する",
        newsletter="最新記事をメールでお届けします。いつでも配信停止できます。",
        cookie="当サイトでは、利便性の向上、アクセス解析および広告配信のためにCookieを使用しています。「すべて同意」をクリックすると、Cookieの使用に同意したものとみなされます。",
        accept="すべて同意",
        reject="拒否",
        settings="設定",
        rights="無断転載を禁じます。",
        sitemap="サイトマップ",
        login="ログイン",
        register="新規登録",
        next="次へ",
        prev="前へ",
        page="ページ",
        ad="広告",
        archives="アーカイブ",
        maylike="こちらの記事もおすすめ",
        docs="ドキュメント",
        edit="このページを編集",
        updated="最終更新日",
        views="閲覧",
        answers="回答",
        asked="質問日",
        votes="票",
        posts="投稿",
        joined="登録日",
        thread="スレッド",
        forum="掲示板",
        trending="話題",
        follow="フォロー",
        min_read="分で読めます",
        skip="コンテンツへスキップ",
        menu="メニュー",
        top="ページトップへ",
        careers="採用情報",
        press="プレス",
        help="ヘルプ",
        status="稼働状況",
        more="もっと見る",
        written="執筆者",
        toc="目次",
        version="バージョン",
        was_helpful="このページは役に立ちましたか?",
        yes="はい",
        no="いいえ",
        sponsored="PR",
        related_searches="関連キーワード",
    ),
    "zh": dict(
        home="首页",
        news="资讯",
        about="关于我们",
        contact="联系我们",
        privacy="隐私政策",
        terms="使用条款",
        imprint="免责声明",
        search="搜索",
        categories="分类",
        tags="标签",
        recent="最新文章",
        popular="本周热门",
        related="相关文章",
        comments="评论",
        leave="发表评论",
        name="昵称",
        reply="回复",
        by="作者:",
        read_more="阅读全文",
        share="分享到",
        subscribe="订阅",
        newsletter="每周精选文章发送到您的邮箱，可随时退订。",
        cookie="本网站使用 Cookie 来改善您的浏览体验、分析流量并展示个性化广告。点击“全部接受”即表示您同意使用 Cookie。",
        accept="全部接受",
        reject="拒绝",
        settings="设置",
        rights="版权所有",
        sitemap="网站地图",
        login="登录",
        register="注册",
        next="下一页",
        prev="上一页",
        page="页",
        ad="广告",
        archives="归档",
        maylike="猜你喜欢",
        docs="文档",
        edit="编辑此页",
        updated="最后更新",
        views="阅读",
        answers="回答",
        asked="提问于",
        votes="票",
        posts="帖子",
        joined="注册时间",
        thread="主题",
        forum="论坛",
        trending="热搜",
        follow="关注",
        min_read="分钟阅读",
        skip="跳到正文",
        menu="菜单",
        top="返回顶部",
        careers="加入我们",
        press="媒体",
        help="帮助中心",
        status="服务状态",
        more="更多",
        written="作者",
        toc="本页目录",
        version="版本",
        was_helpful="本页内容是否有帮助？",
        yes="是",
        no="否",
        sponsored="推广",
        related_searches="相关搜索",
    ),
    "ru": dict(
        home="Главная",
        news="Новости",
        about="О нас",
        contact="Контакты",
        privacy="Политика конфиденциальности",
        terms="Пользовательское соглашение",
        imprint="Правовая информация",
        search="Поиск",
        categories="Рубрики",
        tags="Метки",
        recent="Свежие записи",
        popular="Популярное за неделю",
        related="Похожие статьи",
        comments="Комментарии",
        leave="Добавить комментарий",
        name="Имя",
        reply="Ответить",
        by="Автор:",
        read_more="Читать далее",
        share="Поделиться",
        subscribe="Подписаться",
        newsletter="Лучшие статьи недели — на вашу почту. Без спама, отписаться можно в любой момент.",
        cookie="Мы используем файлы cookie, чтобы сайт работал лучше, для анализа посещаемости и показа персонализированной рекламы. Нажимая «Принять все», вы соглашаетесь с их использованием.",
        accept="Принять все",
        reject="Отклонить",
        settings="Настройки",
        rights="Все права защищены.",
        sitemap="Карта сайта",
        login="Войти",
        register="Регистрация",
        next="Далее",
        prev="Назад",
        page="Страница",
        ad="Реклама",
        archives="Архивы",
        maylike="Вам может понравиться",
        docs="Документация",
        edit="Редактировать страницу",
        updated="Обновлено",
        views="просмотров",
        answers="ответов",
        asked="задан",
        votes="голосов",
        posts="сообщений",
        joined="Зарегистрирован",
        thread="Тема",
        forum="Форум",
        trending="В тренде",
        follow="Подписаться",
        min_read="мин. чтения",
        skip="Перейти к содержимому",
        menu="Меню",
        top="Наверх",
        careers="Вакансии",
        press="Пресса",
        help="Помощь",
        status="Статус сервиса",
        more="Ещё",
        written="Автор",
        toc="На этой странице",
        version="Версия",
        was_helpful="Была ли эта страница полезной?",
        yes="Да",
        no="Нет",
        sponsored="Спонсорский материал",
        related_searches="Похожие запросы",
    ),
}

CATEGORIES = {
    "en": [
        "Linux",
        "Programming",
        "Python",
        "DevOps",
        "Security",
        "Networking",
        "Databases",
        "Cloud",
        "Tutorials",
        "Open Source",
        "Hardware",
        "Web Development",
    ],
    "de": [
        "Linux",
        "Programmierung",
        "Python",
        "Server",
        "Sicherheit",
        "Netzwerk",
        "Datenbanken",
        "Anleitungen",
        "Open Source",
        "Hardware",
    ],
    "fr": [
        "Linux",
        "Programmation",
        "Python",
        "Serveurs",
        "Sécurité",
        "Réseau",
        "Bases de données",
        "Tutoriels",
        "Logiciel libre",
    ],
    "es": [
        "Linux",
        "Programación",
        "Python",
        "Servidores",
        "Seguridad",
        "Redes",
        "Bases de datos",
        "Tutoriales",
        "Software libre",
    ],
    "ja": [
        "Linux",
        "プログラミング",
        "Python",
        "サーバー",
        "セキュリティ",
        "ネットワーク",
        "データベース",
        "入門",
        "オープンソース",
    ],
    "zh": ["Linux", "编程", "Python", "运维", "安全", "网络", "数据库", "教程", "开源"],
    "ru": [
        "Linux",
        "Программирование",
        "Python",
        "Администрирование",
        "Безопасность",
        "Сети",
        "Базы данных",
        "Руководства",
    ],
}

HEADLINES = {  # sidebar / related-article headlines (boilerplate, repeated across pages of a site)
    "en": [
        "10 Commands Every Linux Admin Should Know",
        "How to Set Up a Reverse Proxy with Nginx",
        "Python Virtual Environments Explained",
        "Understanding systemd Units",
        "Why Your SSH Keys Need a Passphrase",
        "Docker vs Podman: A Practical Comparison",
        "Getting Started with PostgreSQL Replication",
        "The Beginner's Guide to Git Branching",
        "Securing Your Home Router in 5 Steps",
        "Bash Scripting Tips You Wish You Knew Earlier",
        "What's New in the Latest Kernel Release",
        "Migrating from Python 2 to Python 3",
        "Backups That Actually Work: The 3-2-1 Rule",
        "Monitoring Servers with Prometheus and Grafana",
        "A Gentle Introduction to Regular Expressions",
    ],
    "de": [
        "Die 10 wichtigsten Linux-Befehle",
        "Nginx als Reverse Proxy einrichten",
        "Python-Umgebungen richtig verwalten",
        "systemd verstehen: Units und Targets",
        "SSH-Schlüssel sicher verwenden",
        "Docker oder Podman? Ein Vergleich",
        "Backups mit rsync automatisieren",
        "Git-Branches für Einsteiger",
        "Den eigenen Router absichern",
        "Raspberry Pi als Heimserver",
    ],
    "fr": [
        "Les 10 commandes Linux indispensables",
        "Configurer Nginx en reverse proxy",
        "Bien utiliser les environnements virtuels Python",
        "Comprendre systemd",
        "Sécuriser ses clés SSH",
        "Docker ou Podman : le comparatif",
        "Sauvegardes automatiques avec rsync",
        "Débuter avec Git",
        "Installer Debian pas à pas",
        "Monter un serveur domestique avec un Raspberry Pi",
    ],
    "es": [
        "Los 10 comandos de Linux que debes conocer",
        "Cómo configurar Nginx como proxy inverso",
        "Entornos virtuales en Python",
        "Entendiendo systemd",
        "Claves SSH seguras",
        "Docker frente a Podman",
        "Copias de seguridad con rsync",
        "Primeros pasos con Git",
        "Instalar Debian paso a paso",
    ],
    "ja": [
        "Linux管理者が覚えるべきコマンド10選",
        "Nginxでリバースプロキシを設定する方法",
        "Python仮想環境の基本",
        "systemd入門",
        "SSH鍵を安全に使うために",
        "DockerとPodmanの違い",
        "rsyncで自動バックアップ",
        "Gitブランチの使い方",
        "Debianのインストール手順",
    ],
    "zh": [
        "Linux 管理员必备的 10 个命令",
        "使用 Nginx 配置反向代理",
        "Python 虚拟环境详解",
        "systemd 入门",
        "如何安全地使用 SSH 密钥",
        "Docker 与 Podman 对比",
        "用 rsync 自动备份",
        "Git 分支入门",
        "Debian 安装图文教程",
    ],
    "ru": [
        "10 команд, которые должен знать каждый администратор Linux",
        "Настройка Nginx в качестве обратного прокси",
        "Виртуальные окружения Python",
        "Знакомство с systemd",
        "Безопасная работа с ключами SSH",
        "Docker или Podman: сравнение",
        "Резервное копирование с rsync",
        "Ветки в Git для начинающих",
        "Установка Debian по шагам",
    ],
}

COMMENTS = {
    "en": [
        "Thanks, this was exactly what I was looking for!",
        "Great write-up. Does this also work on Ubuntu 22.04?",
        "I followed the steps but got a permission denied error at the end. Any idea?",
        "Bookmarked. Clear and to the point.",
        "This saved me hours of debugging, thank you.",
        "Small typo in the second paragraph, otherwise excellent.",
        "Could you do a follow-up on the advanced options?",
        "Works fine here, tested on Debian 12.",
    ],
    "de": [
        "Danke, genau das habe ich gesucht!",
        "Super erklärt. Funktioniert das auch unter Ubuntu?",
        "Bei mir kommt am Ende „Permission denied“. Jemand eine Idee?",
        "Sehr hilfreich, vielen Dank!",
        "Klappt unter Debian 12 einwandfrei.",
    ],
    "fr": [
        "Merci, c’est exactement ce que je cherchais !",
        "Très clair. Est-ce que ça marche aussi sous Ubuntu ?",
        "J’ai une erreur « permission denied » à la fin, une idée ?",
        "Super tuto, merci beaucoup.",
        "Testé sous Debian 12, ça fonctionne.",
    ],
    "es": [
        "¡Gracias, justo lo que buscaba!",
        "Muy bien explicado. ¿Funciona también en Ubuntu?",
        "Me sale «permission denied» al final, ¿alguna idea?",
        "Muy útil, gracias.",
        "Probado en Debian 12 y funciona.",
    ],
    "ja": [
        "とても参考になりました。ありがとうございます！",
        "Ubuntuでも同じ手順で動きますか？",
        "最後に permission denied と出てしまいました…",
        "わかりやすい解説でした。",
        "Debian 12で動作確認しました。",
    ],
    "zh": [
        "谢谢，正好需要这个！",
        "讲得很清楚，请问 Ubuntu 上也适用吗？",
        "最后一步报 permission denied，有人知道怎么办吗？",
        "收藏了，非常有用。",
        "在 Debian 12 上测试通过。",
    ],
    "ru": [
        "Спасибо, как раз то, что искал!",
        "Отлично написано. А на Ubuntu это тоже работает?",
        "В конце получаю permission denied, есть идеи?",
        "Очень полезно, спасибо.",
        "Проверил на Debian 12 — всё работает.",
    ],
}
NICKS = [
    "tux_fan",
    "m.keller",
    "dev_null",
    "sysadmin42",
    "oldschool",
    "anna_k",
    "pixelpusher",
    "grepmaster",
    "kernelpanic",
    "j0hn",
    "linuxlover",
    "quietcoder",
    "rootless",
    "nullpointer",
    "bytewalker",
    "neko_san",
    "debianer",
]

MONTHS = {
    "de": [
        "Januar",
        "Februar",
        "März",
        "April",
        "Mai",
        "Juni",
        "Juli",
        "August",
        "September",
        "Oktober",
        "November",
        "Dezember",
    ],
    "fr": [
        "janvier",
        "février",
        "mars",
        "avril",
        "mai",
        "juin",
        "juillet",
        "août",
        "septembre",
        "octobre",
        "novembre",
        "décembre",
    ],
    "es": [
        "enero",
        "febrero",
        "marzo",
        "abril",
        "mayo",
        "junio",
        "julio",
        "agosto",
        "septiembre",
        "octubre",
        "noviembre",
        "diciembre",
    ],
    "ru": [
        "января",
        "февраля",
        "марта",
        "апреля",
        "мая",
        "июня",
        "июля",
        "августа",
        "сентября",
        "октября",
        "ноября",
        "декабря",
    ],
}


def fmt_date(d: dt.date, lang: str, style: int = 0) -> str:
    if lang in ("ja", "zh"):
        return f"{d.year}年{d.month}月{d.day}日" if style % 2 == 0 else d.isoformat()
    if lang == "en":
        return [d.strftime("%B %-d, %Y"), d.strftime("%d %b %Y"), d.isoformat(), d.strftime("%m/%d/%Y")][style % 4]
    if style % 3 == 2:
        return d.strftime("%d.%m.%Y") if lang in ("de", "ru") else d.strftime("%d/%m/%Y")
    m = MONTHS[lang][d.month - 1]
    return {
        "de": f"{d.day}. {m} {d.year}",
        "fr": f"{d.day} {m} {d.year}",
        "es": f"{d.day} de {m} de {d.year}",
        "ru": f"{d.day} {m} {d.year} г.",
    }[lang]


def slugify(text: str, rng: random.Random | None = None) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if len(s) < 4 and rng is not None:  # non-Latin titles: fall back to an id-like slug
        s = f"p{rng.randint(1000, 99999)}"
    return s[:70].rstrip("-")


# ---------------------------------------------------------------- sites


@dataclass
class Site:
    domain: str
    name: str
    theme: str
    lang: str
    server: str
    path: str  # pattern: {slug} {id} {y} {m} {d}
    tagline: str = ""

    def url(self, rng: random.Random, title: str, date: dt.date) -> str:
        p = self.path.format(
            slug=slugify(title, rng),
            id=rng.randint(10000, 999999),
            y=date.year,
            m=f"{date.month:02d}",
            d=f"{date.day:02d}",
        )
        return f"https://{self.domain}{p}"


SITES = [
    Site(
        "linuxcorner.net",
        "Linux Corner",
        "wpblog",
        "en",
        "nginx",
        "/{y}/{m}/{slug}/",
        "Tips, tricks and tutorials for Linux users",
    ),
    Site(
        "pythonista-notes.blog",
        "Pythonista Notes",
        "wpblog",
        "en",
        "apache",
        "/posts/{slug}.html",
        "Notes from a working Python developer",
    ),
    Site(
        "devdigest-news.com",
        "DevDigest",
        "news",
        "en",
        "cloudflare",
        "/tech/{y}/{m}/{d}/{slug}-{id}",
        "Technology news for developers",
    ),
    Site("forums.tuxhelpers.org", "TuxHelpers Community", "forum", "en", "nginx", "/t/{slug}/{id}", ""),
    Site("docs-mirror.techpages.io", "TechPages Docs", "docs", "en", "cloudflare", "/mirror/{slug}.html", ""),
    Site(
        "articlehub365.com",
        "ArticleHub365",
        "farm",
        "en",
        "apache",
        "/{slug}-{id}.html",
        "Free articles on everything",
    ),
    Site("askdev.stackanswers.net", "StackAnswers", "qa", "en", "iis", "/questions/{id}/{slug}", ""),
    Site("codewriters.pub", "CodeWriters", "pub", "en", "cloudflare", "/p/{slug}-{id}", ""),
    Site("support.acme-cloudhost.com", "ACME CloudHost", "corp", "en", "nginx", "/kb/articles/{id}-{slug}", ""),
    Site("snippetwire.com", "SnippetWire", "farm", "en", "nginx", "/read/{id}/{slug}", ""),
    Site("linux-tipps.de", "Linux-Tipps", "wpblog", "de", "apache", "/{y}/{m}/{slug}/", "Linux einfach erklärt"),
    Site("techticker.de", "TechTicker", "news", "de", "nginx", "/artikel/{slug}-{id}.html", ""),
    Site("forum.ubuntu-freunde.de", "Ubuntu-Freunde Forum", "forum", "de", "apache", "/viewtopic.php?t={id}", ""),
    Site("wissen-24.info", "Wissen24", "farm", "de", "apache", "/ratgeber/{slug}-{id}.html", ""),
    Site(
        "blog-linuxien.fr",
        "Le blog du Linuxien",
        "wpblog",
        "fr",
        "apache",
        "/{y}/{m}/{d}/{slug}/",
        "Astuces Linux et logiciel libre",
    ),
    Site("actu-informatique.fr", "Actu Informatique", "news", "fr", "cloudflare", "/article/{id}/{slug}", ""),
    Site("forum.entraide-libre.fr", "Entraide Libre", "forum", "fr", "nginx", "/sujet/{id}-{slug}", ""),
    Site("tutos-gratuits.net", "Tutos Gratuits", "farm", "fr", "apache", "/tuto-{id}-{slug}.html", ""),
    Site(
        "blog.tecnolibre.es", "TecnoLibre", "wpblog", "es", "nginx", "/{y}/{m}/{slug}/", "Software libre y tecnología"
    ),
    Site("noticias-tec.com.mx", "Noticias Tec", "news", "es", "cloudflare", "/nota/{slug}-{id}", ""),
    Site("foro.linuxeros.org", "Foro Linuxeros", "forum", "es", "apache", "/tema/{id}/{slug}", ""),
    Site("linux-memo.jp", "Linux備忘録", "wpblog", "ja", "apache", "/archives/{id}", "Linuxの設定メモ"),
    Site("it-news-japan.jp", "ITニュース速報", "news", "ja", "nginx", "/article/{y}{m}{d}-{id}.html", ""),
    Site("qa.dev-chiebukuro.jp", "開発者知恵袋", "qa", "ja", "nginx", "/q/{id}", ""),
    Site("matome-it.net", "ITまとめ", "farm", "ja", "apache", "/entry/{id}.html", ""),
    Site(
        "linux-jiaocheng.cn", "Linux教程网", "wpblog", "zh", "nginx", "/archives/{id}.html", "学Linux，上Linux教程网"
    ),
    Site("kaifazhe-news.com.cn", "开发者资讯", "news", "zh", "nginx", "/news/{y}{m}{d}/{id}.shtml", ""),
    Site("bbs.linuxzj.net", "Linux之家论坛", "forum", "zh", "nginx", "/thread-{id}-1-1.html", ""),
    Site(
        "linux-zametki.ru",
        "Заметки линуксоида",
        "wpblog",
        "ru",
        "nginx",
        "/{y}/{m}/{slug}/",
        "Записки системного администратора",
    ),
    Site("itnovosti.ru", "IT-Новости", "news", "ru", "nginx", "/news/{id}", ""),
    Site("forum.linux-help.ru", "Linux Help — форум", "forum", "ru", "apache", "/index.php?showtopic={id}", ""),
]


def sites_for(lang: str) -> list[Site]:
    return [s for s in SITES if s.lang == lang]


# ---------------------------------------------------------------- building blocks


def article_html(blocks: list, with_ids: bool = False) -> str:
    out, in_list = [], False
    for tag, text in blocks:
        if tag == "li" and not in_list:
            out.append("<ul>")
            in_list = True
        if tag != "li" and in_list:
            out.append("</ul>")
            in_list = False
        if tag == "pre":
            out.append(f"<pre><code>{escape(text)}</code></pre>")
        elif tag in ("h2", "h3"):
            out.append(f"<{tag}>{escape(text)}</{tag}>")
        else:
            out.append(f"<{tag}>{escape(text)}</{tag}>")
    if in_list:
        out.append("</ul>")
    return "\n".join(out)


def _links(items, cls="", sep="\n"):
    return sep.join(f'<li{cls}><a href="{escape(h)}">{escape(t)}</a></li>' for h, t in items)


def _cookie_banner(lab, rng, style):
    if style == 0:
        return (
            f'<div id="cookie-notice" class="cookie-banner" role="dialog" aria-live="polite"><p>{escape(lab["cookie"])} '
            f'<a href="/{slugify(lab["privacy"]) or "privacy"}/">{escape(lab["privacy"])}</a></p>'
            f'<button class="btn btn-primary" id="cn-accept">{escape(lab["accept"])}</button> '
            f'<button class="btn" id="cn-reject">{escape(lab["reject"])}</button> '
            f'<a href="#" class="cn-settings">{escape(lab["settings"])}</a></div>'
        )
    return (
        f'<div class="cc-window cc-banner cc-bottom"><span class="cc-message">{escape(lab["cookie"])}</span>'
        f'<div class="cc-compliance"><a class="cc-btn cc-allow">{escape(lab["accept"])}</a></div></div>'
    )


def _head(title, lang, rng, desc="", extra=""):
    ga = f"G-{rng.randint(10**9, 10**10 - 1):X}"[:12]
    return f"""<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<meta name="description" content="{escape(desc[:155])}">
<meta property="og:title" content="{escape(title)}">
<meta property="og:type" content="article">
<link rel="stylesheet" href="/assets/css/main.{rng.randint(10**7, 10**8):x}.css">
<link rel="icon" href="/favicon.ico">
<script async src="https://www.googletagmanager.com/gtag/js?id={ga}"></script>
<script>window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments);}}gtag('js',new Date());gtag('config','{ga}');</script>
{extra}</head>
"""


def _nav(site, lab, rng, n=6):
    cats = CATEGORIES[site.lang]
    picks = rng.sample(cats, min(n, len(cats)))
    items = (
        [("/", lab["home"])]
        + [(f"/category/{slugify(c) or 'c' + str(i)}/", c) for i, c in enumerate(picks)]
        + [("/about/", lab["about"]), ("/contact/", lab["contact"])]
    )
    return f'<nav class="main-nav" aria-label="{escape(lab["menu"])}"><ul>\n{_links(items)}\n</ul></nav>'


def _headline_links(site, rng, k, prefix="/"):
    heads = HEADLINES[site.lang]
    return [(f"{prefix}{slugify(h, rng)}/", h) for h in rng.sample(heads, min(k, len(heads)))]


def _footer(site, lab, rng, year, fat=False):
    base = [
        ("/about/", lab["about"]),
        ("/contact/", lab["contact"]),
        ("/privacy/", lab["privacy"]),
        ("/terms/", lab["terms"]),
        ("/sitemap.xml", lab["sitemap"]),
    ]
    if site.lang == "de":
        base.append(("/impressum/", lab["imprint"]))
    cols = ""
    if fat:
        cols = (
            '<div class="footer-cols">'
            + "".join(
                f'<div class="col"><h4>{escape(h)}</h4><ul>{_links([(f"/{slugify(x, rng)}/", x) for x in xs])}</ul></div>'
                for h, xs in [
                    (lab["categories"], rng.sample(CATEGORIES[site.lang], 5)),
                    (lab["more"], [lab["careers"], lab["press"], lab["help"], lab["status"]]),
                ]
            )
            + "</div>"
        )
    social = " ".join(
        f'<a href="https://{s}.com/{slugify(site.name, rng)}" rel="noopener">{s.title()}</a>'
        for s in rng.sample(["twitter", "facebook", "linkedin", "youtube", "instagram", "mastodon"], 3)
    )
    return (
        f'<footer class="site-footer">{cols}<ul class="footer-links">{_links(base)}</ul>'
        f'<div class="social">{social}</div>'
        f'<p class="copyright">© {year - rng.randint(0, 8)}–{year} {escape(site.name)}. {escape(lab["rights"])}</p>'
        f'<a href="#top" class="back-to-top">{escape(lab["top"])} ↑</a></footer>'
    )


def _comments(site, lab, rng, date, k):
    if k == 0:
        return ""
    items = []
    for _ in range(k):
        d = date + dt.timedelta(days=rng.randint(0, 400))
        items.append(
            f'<li class="comment"><div class="comment-author"><img class="avatar" src="/avatar/{rng.randint(1, 9999)}.png" alt="">'
            f'<b>{escape(rng.choice(NICKS))}</b></div><div class="comment-meta">{escape(fmt_date(d, site.lang, 0))}</div>'
            f'<p>{escape(rng.choice(COMMENTS[site.lang]))}</p><a class="reply" href="#respond">{escape(lab["reply"])}</a></li>'
        )
    form = (
        f'<div id="respond"><h3>{escape(lab["leave"])}</h3><form action="/wp-comments-post.php" method="post">'
        f'<label>{escape(lab["name"])}</label><input name="author"><textarea name="comment"></textarea>'
        f'<button type="submit">{escape(lab["reply"])}</button></form></div>'
    )
    return f'<section class="comments"><h2>{k} {escape(lab["comments"])}</h2><ol class="comment-list">{"".join(items)}</ol>{form}</section>'


def _ad(lab, rng):
    return (
        f'<div class="ad-slot" data-slot="{rng.randint(10**9, 10**10)}"><span class="ad-label">{escape(lab["ad"])}</span>'
        f'<ins class="adsbygoogle" style="display:block" data-ad-client="ca-pub-{rng.randint(10**15, 10**16)}"></ins></div>'
    )


# ---------------------------------------------------------------- themes


def render(
    site: Site,
    title: str,
    main_html: str,
    date: dt.date,
    rng: random.Random,
    *,
    author: str | None = None,
    kind: str = "article",
    n_comments: int | None = None,
) -> str:
    """Wrap main_html into a full page of `site`. kind: article | listing | plain."""
    lab = L[site.lang]
    author = author or rng.choice(NICKS)
    n_comments = rng.choice([0, 0, 1, 2, 3, 5]) if n_comments is None else n_comments
    fn = {
        "wpblog": _wpblog,
        "news": _news,
        "forum": _forum,
        "docs": _docs,
        "farm": _farm,
        "qa": _qa,
        "pub": _pub,
        "corp": _corp,
    }[site.theme]
    return fn(site, lab, title, main_html, date, rng, author, kind, n_comments)


def _wpblog(site, lab, title, main, date, rng, author, kind, nc):
    cats = rng.sample(CATEGORIES[site.lang], 2)
    meta = (
        f'<div class="entry-meta"><span class="posted-on"><time datetime="{date.isoformat()}T{rng.randint(6, 22):02d}:{rng.randint(0, 59):02d}:00+00:00">'
        f'{escape(fmt_date(date, site.lang, rng.randint(0, 3)))}</time></span> <span class="byline">{escape(lab["by"])} '
        f'<a href="/author/{escape(author)}/">{escape(author)}</a></span> <span class="cat-links">'
        + ", ".join(f'<a href="/category/{slugify(c) or "c"}/" rel="category tag">{escape(c)}</a>' for c in cats)
        + "</span></div>"
    )
    body = (
        f'<article class="post type-post status-publish hentry"><header class="entry-header"><h1 class="entry-title">{escape(title)}</h1>{meta}</header>'
        f'<div class="entry-content">\n{main}\n</div>'
        if kind == "article"
        else f'<h1 class="page-title">{escape(title)}</h1>\n{main}'
    )
    if kind == "article":
        body += (
            f'<footer class="entry-footer"><span class="tags-links">{escape(lab["tags"])}: '
            + ", ".join(
                f'<a href="/tag/{slugify(t, rng)}/">{escape(t)}</a>' for t in rng.sample(CATEGORIES[site.lang], 3)
            )
            + f'</span><div class="share">{escape(lab["share"])}: <a href="#">Twitter</a> <a href="#">Facebook</a> <a href="#">Reddit</a></div></footer></article>'
            f'<nav class="post-navigation"><a rel="prev" href="{escape(_headline_links(site, rng, 1)[0][0])}">← {escape(lab["prev"])}</a> '
            f'<a rel="next" href="{escape(_headline_links(site, rng, 1)[0][0])}">{escape(lab["next"])} →</a></nav>'
            + _comments(site, lab, rng, date, nc)
        )
    side = (
        f'<aside id="secondary" class="widget-area"><section class="widget widget_search"><form role="search" action="/"><input type="search" name="s" placeholder="{escape(lab["search"])} …"></form></section>'
        f'<section class="widget widget_recent_entries"><h2 class="widget-title">{escape(lab["recent"])}</h2><ul>{_links(_headline_links(site, rng, 5))}</ul></section>'
        f'<section class="widget widget_categories"><h2 class="widget-title">{escape(lab["categories"])}</h2><ul>'
        + _links([(f"/category/{slugify(c) or 'c'}/", f"{c} ({rng.randint(3, 140)})") for c in CATEGORIES[site.lang]])
        + f'</ul></section><section class="widget widget_archive"><h2 class="widget-title">{escape(lab["archives"])}</h2><ul>'
        + _links(
            [
                (
                    f"/{date.year - (i // 12)}/{12 - i % 12:02d}/",
                    fmt_date(dt.date(date.year - (i // 12), 12 - i % 12, 1), site.lang, 0).split(" ", 1)[-1]
                    if site.lang not in ("ja", "zh")
                    else f"{date.year - (i // 12)}年{12 - i % 12}月",
                )
                for i in range(rng.randint(4, 10))
            ]
        )
        + "</ul></section></aside>"
    )
    return (
        _head(f"{title} – {site.name}", site.lang, rng, title)
        + f'<body class="post-template-default single single-post"><a class="skip-link screen-reader-text" href="#content">{escape(lab["skip"])}</a>'
        f'<div id="page" class="site"><header id="masthead" class="site-header"><div class="site-branding"><p class="site-title"><a href="/" rel="home">{escape(site.name)}</a></p>'
        f'<p class="site-description">{escape(site.tagline)}</p></div>{_nav(site, lab, rng)}</header>'
        f'<div id="content" class="site-content"><main id="main" class="site-main">{body}</main>{side}</div>'
        f"{_footer(site, lab, rng, date.year + 1)}</div>{_cookie_banner(lab, rng, 0)}"
        f'<script src="/wp-includes/js/jquery/jquery.min.js?ver=3.7.1"></script><script src="/wp-content/themes/twentytwenty/assets/js/index.js?ver=2.{rng.randint(0, 9)}"></script></body></html>\n'
    )


def _news(site, lab, title, main, date, rng, author, kind, nc):
    ticker = " +++ ".join(rng.sample(HEADLINES[site.lang], 3))
    related = "".join(
        f'<div class="card"><a href="{escape(h)}"><img src="/img/thumbs/{rng.randint(1000, 9999)}.jpg" alt=""><h3>{escape(t)}</h3></a></div>'
        for h, t in _headline_links(site, rng, 4, "/news/")
    )
    if kind == "article":
        body = (
            f'<nav class="breadcrumb"><a href="/">{escape(lab["home"])}</a> › <a href="/tech/">{escape(rng.choice(CATEGORIES[site.lang]))}</a></nav>'
            f'<article class="story"><h1 class="headline">{escape(title)}</h1><div class="byline">{escape(lab["by"])} <a href="/autor/{escape(author)}">{escape(author)}</a> · '
            f'<time datetime="{date.isoformat()}">{escape(fmt_date(date, site.lang, rng.randint(0, 2)))}</time> · {rng.randint(3, 14)} {escape(lab["min_read"])}</div>'
            f'<figure class="lead-image"><img src="/img/{date.year}/{rng.randint(10**5, 10**6)}.jpg" alt=""><figcaption>© {escape(site.name)}</figcaption></figure>'
            f'<div class="story-body">\n{main}\n</div>{_ad(lab, rng)}<div class="share-bar">{escape(lab["share"])}</div></article>'
            f'<section class="related"><h2>{escape(lab["related"])}</h2><div class="cards">{related}</div></section>'
            + _comments(site, lab, rng, date, nc)
        )
    else:
        body = f"<h1>{escape(title)}</h1>\n{main}"
    return (
        _head(
            f"{title} | {site.name}",
            site.lang,
            rng,
            title,
            '<script src="https://securepubads.g.doubleclick.net/tag/js/gpt.js" async></script>\n',
        )
        + f'<body><div class="topbar"><span class="date">{escape(fmt_date(date, site.lang, 0))}</span> <a href="/login">{escape(lab["login"])}</a> | <a href="/abo">{escape(lab["subscribe"])}</a></div>'
        f'<header class="masthead"><a class="logo" href="/">{escape(site.name)}</a>{_nav(site, lab, rng, 8)}'
        f'<form class="search" action="/suche"><input name="q" placeholder="{escape(lab["search"])}"></form></header>'
        f'<div class="ticker"><b>{escape(lab["trending"])}:</b> {escape(ticker)}</div>{_ad(lab, rng)}'
        f'<div class="layout"><main>{body}</main><aside class="rail"><h3>{escape(lab["popular"])}</h3><ol>{_links(_headline_links(site, rng, 5, "/news/"))}</ol>{_ad(lab, rng)}'
        f'<div class="newsletter"><h3>Newsletter</h3><p>{escape(lab["newsletter"])}</p><input type="email"><button>{escape(lab["subscribe"])}</button></div></aside></div>'
        f"{_footer(site, lab, rng, date.year + 1, fat=True)}{_cookie_banner(lab, rng, 1)}</body></html>\n"
    )


def _forum(site, lab, title, main, date, rng, author, kind, nc):
    def post(user, when, content, n):
        return (
            f'<div class="post" id="p{rng.randint(10**5, 10**7)}"><div class="postprofile"><dl><dt><a href="/memberlist.php?u={rng.randint(2, 90000)}" class="username">{escape(user)}</a></dt>'
            f"<dd>{escape(lab['posts'])}: {rng.randint(1, 9000)}</dd><dd>{escape(lab['joined'])}: {escape(fmt_date(when - dt.timedelta(days=rng.randint(30, 3000)), site.lang, 2))}</dd></dl></div>"
            f'<div class="postbody"><p class="author">#{n} » {escape(fmt_date(when, site.lang, 2))} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}</p>'
            f'<div class="content">{content}</div><div class="signature">-- {escape(rng.choice(["Debian 12 / KDE", "Arch btw", "ThinkPad X220, Debian testing", "RTFM", "Gentoo since 2004"]))}</div></div></div>'
        )

    posts = [post(author, date, main, 1)]
    for i in range(nc):
        posts.append(
            post(
                rng.choice(NICKS),
                date + dt.timedelta(hours=rng.randint(1, 300)),
                f"<p>{escape(rng.choice(COMMENTS[site.lang]))}</p>",
                i + 2,
            )
        )
    forums = rng.sample(CATEGORIES[site.lang], 2)
    online = {
        "de": "Wer ist online?",
        "fr": "Qui est en ligne ?",
        "es": "¿Quién está conectado?",
        "ru": "Кто сейчас на конференции",
        "zh": "在线用户",
        "ja": "オンラインのユーザー",
    }.get(site.lang, "Who is online")
    return (
        _head(f"{title} - {site.name}", site.lang, rng, title)
        + f'<body id="phpbb" class="section-viewtopic"><div class="headerbar"><a href="/" class="logo">{escape(site.name)}</a>'
        f'<ul class="navbar"><li><a href="/faq.php">FAQ</a></li><li><a href="/search.php">{escape(lab["search"])}</a></li><li><a href="/ucp.php?mode=register">{escape(lab["register"])}</a></li><li><a href="/ucp.php?mode=login">{escape(lab["login"])}</a></li></ul></div>'
        f'<div class="navbar breadcrumbs"><a href="/">{escape(lab["forum"])}</a> » <a href="/viewforum.php?f={rng.randint(1, 80)}">{escape(forums[0])}</a> » <a href="/viewforum.php?f={rng.randint(1, 80)}">{escape(forums[1])}</a></div>'
        f'<h2 class="topic-title">{escape(title)}</h2><div class="pagination">{nc + 1} {escape(lab["posts"])} • {escape(lab["page"])} <strong>1</strong> / 1</div>'
        + "\n".join(posts)
        + f'<div class="jumpbox"><select><option>{escape(forums[0])}</option><option>{escape(forums[1])}</option></select></div>'
        f'<div class="stat-block online-list"><h3>{escape(online)}</h3><p>{rng.randint(2, 60)} / {rng.randint(60, 500)}</p></div>'
        f'<div class="copyright">Powered by phpBB® Forum Software © phpBB Limited<br><a href="/privacy">{escape(lab["privacy"])}</a> | <a href="/terms">{escape(lab["terms"])}</a></div>{_cookie_banner(lab, rng, 1)}</body></html>\n'
    )


def _docs(site, lab, title, main, date, rng, author, kind, nc):
    toc = _links(_headline_links(site, rng, 8, "/mirror/"))
    return (
        _head(f"{title} — {site.name}", site.lang, rng, title, '<link rel="stylesheet" href="/_static/theme.css">\n')
        + f'<body class="wy-body-for-nav"><div class="wy-grid-for-nav"><nav class="wy-nav-side"><div class="wy-side-nav-search"><a href="/" class="icon icon-home">{escape(site.name)}</a>'
        f'<div class="version">{escape(lab["version"])}: latest</div><form action="/search.html"><input name="q" placeholder="{escape(lab["search"])} docs"></form></div>'
        f'<div class="wy-menu wy-menu-vertical"><p class="caption">{escape(lab["docs"])}</p><ul>{toc}</ul></div></nav>'
        f'<section class="wy-nav-content-wrap"><div class="wy-nav-content"><div role="navigation" aria-label="breadcrumbs"><ul class="wy-breadcrumbs"><li><a href="/">{escape(lab["docs"])}</a> »</li><li>{escape(title)}</li>'
        f'<li class="wy-breadcrumbs-aside"><a href="https://github.com/techpages/docs/edit/main/{slugify(title, rng)}.rst">{escape(lab["edit"])}</a></li></ul><hr></div>'
        f'<div class="document" itemscope itemtype="http://schema.org/Article"><div itemprop="articleBody"><section><h1>{escape(title)}</h1>\n{main}\n</section></div></div>'
        f'<footer><div class="rst-footer-buttons"><a href="#" class="btn btn-neutral float-left">← {escape(lab["prev"])}</a><a href="#" class="btn btn-neutral float-right">{escape(lab["next"])} →</a></div><hr>'
        f'<p>{escape(lab["updated"])}: {escape(fmt_date(date, site.lang, 2))}. {escape(lab["was_helpful"])} <a href="#">{escape(lab["yes"])}</a> / <a href="#">{escape(lab["no"])}</a></p>'
        f"<p>© Copyright {date.year}, the authors. Built with Sphinx using a theme provided by Read the Docs.</p></footer></div></section></div></body></html>\n"
    )


def _farm(site, lab, title, main, date, rng, author, kind, nc):
    searches = rng.sample(HEADLINES[site.lang], min(6, len(HEADLINES[site.lang])))
    paras = main.split("\n")
    # content farms interleave ads with the scraped text
    mixed = []
    for i, p in enumerate(paras):
        mixed.append(p)
        if i and i % 4 == 0:
            mixed.append(_ad(lab, rng))
    return (
        _head(
            f"{title} - {site.name}",
            site.lang,
            rng,
            title,
            f'<script async src="https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js?client=ca-pub-{rng.randint(10**15, 10**16)}"></script>\n',
        )
        + f'<body><div id="header"><a href="/"><img src="/logo.png" alt="{escape(site.name)}"></a><div class="top-links">{_nav(site, lab, rng, 9)}</div></div>{_ad(lab, rng)}'
        f'<div id="wrap"><div id="content"><h1>{escape(title)}</h1><div class="meta">{escape(fmt_date(date, site.lang, 1))} | {rng.randint(100, 90000)} {escape(lab["views"])}</div>'
        f'<div class="post-body">\n' + "\n".join(mixed) + "\n</div>"
        f'<div class="related-searches"><h3>{escape(lab["related_searches"])}</h3><ul>{_links([(f"/search?q={slugify(s, rng)}", s) for s in searches])}</ul></div>'
        f'<div class="you-may-like"><h3>{escape(lab["maylike"])}</h3><ul>{_links(_headline_links(site, rng, 8))}</ul></div>'
        f'<div class="sponsored"><h3>{escape(lab["sponsored"])}</h3>{_ad(lab, rng)}{_ad(lab, rng)}</div></div>'
        f'<div id="sidebar">{_ad(lab, rng)}<h3>{escape(lab["popular"])}</h3><ul>{_links(_headline_links(site, rng, 10))}</ul></div></div>'
        f"{_footer(site, lab, rng, date.year + 1)}</body></html>\n"
    )


def _qa(site, lab, title, main, date, rng, author, kind, nc):
    q_user, a_user = rng.sample(NICKS, 2)
    question = {
        "en": "How does this work? I read the documentation but I'm still confused. Can someone explain it with an example?",
        "ja": "ドキュメントを読んでもよく分かりません。具体例で説明していただけますか？",
    }.get(site.lang, "?")
    return (
        _head(f"{title} - {site.name}", site.lang, rng, title)
        + f'<body class="question-page"><header class="top-bar"><a class="logo" href="/">{escape(site.name)}</a><form action="/search"><input name="q" placeholder="{escape(lab["search"])}…"></form>'
        f'<a href="/users/login">{escape(lab["login"])}</a> <a href="/users/signup">{escape(lab["register"])}</a></header>'
        f'<div class="container"><nav class="left-sidebar"><ul><li><a href="/">{escape(lab["home"])}</a></li><li><a href="/questions">Questions</a></li><li><a href="/tags">{escape(lab["tags"])}</a></li><li><a href="/users">Users</a></li></ul></nav>'
        f'<div id="content"><div id="question-header"><h1>{escape(title)}</h1></div><div class="question-stats">{escape(lab["asked"])} {escape(fmt_date(date, site.lang, 2))} · {rng.randint(50, 90000)} {escape(lab["views"])}</div>'
        f'<div class="question"><div class="votecell">{rng.randint(0, 300)}</div><div class="postcell"><p>{escape(question)}</p>'
        f'<div class="post-taglist">'
        + " ".join(
            f'<a class="post-tag" href="/questions/tagged/{slugify(t, rng)}">{escape(t.lower())}</a>'
            for t in rng.sample(CATEGORIES[site.lang], 3)
        )
        + f"</div>"
        f'<div class="user-info">{escape(q_user)}</div></div></div>'
        f'<h2>{rng.randint(1, 4)} {escape(lab["answers"])}</h2><div class="answer accepted-answer"><div class="votecell">{rng.randint(1, 900)} ✓</div><div class="answercell"><div class="s-prose">\n{main}\n</div><div class="user-info">{escape(a_user)}</div></div></div>'
        f'<h4>{escape(lab["related"])}</h4><ul class="related">{_links(_headline_links(site, rng, 6, "/questions/"))}</ul></div>'
        f'<div class="sidebar"><div class="s-sidebarwidget"><h4>Hot Network Questions</h4><ul>{_links(_headline_links(site, rng, 6, "/q/"))}</ul></div></div></div>'
        f'<footer class="site-footer"><a href="/tour">Tour</a> <a href="/help">{escape(lab["help"])}</a> <a href="/legal/privacy-policy">{escape(lab["privacy"])}</a> '
        f"<p>Site design / logo © {date.year + 1} {escape(site.name)}; user contributions licensed under CC BY-SA.</p></footer>{_cookie_banner(lab, rng, 0)}</body></html>\n"
    )


def _pub(site, lab, title, main, date, rng, author, kind, nc):
    more = "".join(
        f'<div class="more-card"><a href="{escape(h)}"><h4>{escape(t)}</h4></a><span>{rng.randint(2, 15)} {escape(lab["min_read"])}</span></div>'
        for h, t in _headline_links(site, rng, 4, f"/@{author}/")
    )
    return (
        _head(f"{title} | by {author} | {site.name}", site.lang, rng, title)
        + f'<body><div class="metabar"><a href="/" class="brand">{escape(site.name)}</a> <a href="/m/signin">{escape(lab["login"])}</a> <a href="/m/signup" class="cta">Get started</a></div>'
        f'<article><h1>{escape(title)}</h1><div class="author-row"><img src="/avatars/{escape(author)}.png" alt=""><a href="/@{escape(author)}">{escape(author)}</a> · <button>{escape(lab["follow"])}</button>'
        f'<div>{rng.randint(3, 12)} {escape(lab["min_read"])} · {escape(fmt_date(date, site.lang, 1))}</div></div><div class="clap-bar">👏 {rng.randint(1, 5000)}</div>'
        f'<section class="body">\n{main}\n</section><div class="clap-bar">👏 {rng.randint(1, 5000)}</div></article>'
        f'<section class="more-from"><h3>{escape(lab["more"])} — {escape(author)}</h3>{more}</section>'
        f'<footer><a href="/about">{escape(lab["about"])}</a> <a href="/help">{escape(lab["help"])}</a> <a href="/terms">{escape(lab["terms"])}</a> <a href="/privacy">{escape(lab["privacy"])}</a></footer></body></html>\n'
    )


def _corp(site, lab, title, main, date, rng, author, kind, nc):
    mega = "".join(
        f'<li class="dropdown"><a href="/{slugify(h, rng)}">{escape(h)}</a><ul>{_links([(f"/{slugify(x, rng)}", x) for x in xs])}</ul></li>'
        for h, xs in [
            ("Products", ["Compute", "Object Storage", "Managed Databases", "Kubernetes", "Load Balancers", "DNS"]),
            ("Solutions", ["Startups", "E-commerce", "Gaming", "Education"]),
            ("Pricing", []),
            ("Docs", ["API Reference", "Tutorials", "CLI"]),
            ("Company", ["About", "Blog", "Careers", "Press"]),
        ]
    )
    return (
        _head(f"{title} – {site.name} Knowledge Base", site.lang, rng, title)
        + f'<body><div class="promo-bar">🎉 Get $200 free credit for 60 days — <a href="/signup?ref=kb">Sign up now</a></div>'
        f'<header><a href="/" class="logo">{escape(site.name)}</a><ul class="mega-menu">{mega}</ul><a href="/login">{escape(lab["login"])}</a> <a class="btn" href="/signup">Sign up</a></header>'
        f'<div class="kb"><nav class="kb-breadcrumb"><a href="/kb">Knowledge Base</a> / <a href="/kb/linux">Linux</a></nav><aside class="kb-toc"><h4>{escape(lab["toc"])}</h4><ul>{_links(_headline_links(site, rng, 5, "/kb/articles/"))}</ul></aside>'
        f'<article><h1>{escape(title)}</h1><p class="kb-meta">{escape(lab["updated"])} {escape(fmt_date(date, site.lang, 0))}</p>\n{main}\n'
        f'<div class="kb-feedback">{escape(lab["was_helpful"])} <button>{escape(lab["yes"])}</button> <button>{escape(lab["no"])}</button></div></article></div>'
        f'{_footer(site, lab, rng, date.year + 1, fat=True)}<script src="https://js.intercomcdn.com/shim.latest.js" async></script>{_cookie_banner(lab, rng, 0)}</body></html>\n'
    )
